/**
 * What the simulated cloud answers and keeps: its `ret` codes (stable for tests), and the signed
 * actions it received. Shared by the server that answers and the round that plays the actions.
 */

/**
 * The non-zero `ret` values the simulated task_list answers with, always with HTTP 200 and empty
 * lists. The service's own table is unpublished; these are the simulator's, kept stable for tests.
 */
export const SIMULATOR_RETS = {
  /** The query has no `service_code`. */
  MISSING_SERVICE_CODE: 40001,
  /** The signature or timestamp header is missing or unreadable, or the signature does not match. */
  BAD_SIGNATURE: 40101,
  /** Correctly signed, but the timestamp is more than the tolerance (300 s) from the simulator's clock. */
  STALE_TIMESTAMP: 40102,
  /** The service code is not one the simulator plays. */
  UNKNOWN_SERVICE: 40301,
  /** cancel_task: no such task is running (never was, or ended). */
  UNKNOWN_TASK: 40401,
  /** send_txt_msg: no such user in the service code. */
  UNKNOWN_USER: 40402,
  /** An action without a parameter it needs. */
  MISSING_PARAMETER: 40002,
  /** management: a function the simulator does not play. */
  UNKNOWN_FUNCTION: 40003,
  /** management: a body or parameter it cannot read (not JSON, an unknown field, a bad limit). */
  BAD_PARAMETER: 40004,
} as const

/** The actions the simulated cloud serves beside task_list (operations.md). */
export type SimulatedOperation = 'cancel_task' | 'send_txt_msg'

/** An action request that arrived correctly signed, as kept for tests and the demo. */
export interface ReceivedAction {
  operation: SimulatedOperation
  /** The path as requested. */
  path: string
  /** The query as received (percent-encoded), and its parameters decoded. */
  query: string
  params: Record<string, string>
  /** The `ret` answered. */
  ret: number
  at: string
}

/** What the simulated cloud does with a signed action: its answer's `ret` and `msg`. */
export type ActionHandler = (
  operation: SimulatedOperation,
  params: Record<string, string>,
) => { ret: number; msg?: string }

import { createHash } from 'node:crypto'
import { API_VERSION_PATH } from './task-list.schema.js'

/**
 * Actions: what an operator asks the cloud to do through livegate (the word is "action", never
 * "operation", which means a GraphQL operation here). Pure: the cloud call's path and query,
 * the checks of what an operator typed, and the fingerprint that makes a retry recognisable.
 */

/** What an action does. */
export type ActionKind = 'STOP_TASK' | 'SEND_MESSAGE'

/**
 * Where an action stands. `REFUSED` is the audit's own: an attempt livegate turned away (no
 * permission, over the rate limit) before anything was sent; GraphQL shows it as `FAILED` with
 * the refusal's code in `message`.
 */
export type ActionState = 'PENDING' | 'SUCCEEDED' | 'FAILED' | 'REFUSED'

/** The cloud's operation names (operations.md). */
export const CLOUD_OPERATION: Record<ActionKind, string> = { STOP_TASK: 'cancel_task', SEND_MESSAGE: 'send_txt_msg' }

/** The longest text an operator may send, or name a user or task with. */
export const MAX_ACTION_TEXT = 1000

/** A stop: the task's service code and cloud id (`hashed_id`). */
export interface StopArgs {
  kind: 'STOP_TASK'
  serviceCode: string
  taskId: string
}

/** A text message to a connected client SDK. */
export interface MessageArgs {
  kind: 'SEND_MESSAGE'
  serviceCode: string
  userName: string
  text: string
  from: string
}

/** What an action asks for, by kind. */
export type ActionArgs = StopArgs | MessageArgs

/** The cloud call of an action: its path and its query, as signed and as sent. */
export interface CloudCall {
  /** e.g. `/api/20140928/cancel_task` (without a base URL's prefix). */
  path: string
  /** `service_code=…&task_id=…`: the values as written, NOT percent-encoded (what is signed). */
  signedQuery: string
  /** The same query with each value percent-encoded (what is sent). */
  sentQuery: string
}

/** The path and query of an action's cloud call, in the order the upstream's demo writes them. */
export function cloudCallOf(args: ActionArgs): CloudCall {
  const pairs: Array<[string, string]> =
    args.kind === 'STOP_TASK'
      ? [
          ['service_code', args.serviceCode],
          ['task_id', args.taskId],
        ]
      : [
          ['service_code', args.serviceCode],
          ['dst_username', args.userName],
          ['message', args.text],
          ['from_username', args.from],
        ]
  return {
    path: `${API_VERSION_PATH}/${CLOUD_OPERATION[args.kind]}`,
    signedQuery: pairs.map(([name, value]) => `${name}=${value}`).join('&'),
    sentQuery: pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&'),
  }
}

// C0 and C1 controls, DEL, and the Unicode line and paragraph separators: a line break breaks
// the cloud's signature (operations.md), and none belongs in a name or a one-line message.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** Why a typed value cannot be sent (a sentence naming `name`), or undefined when it can. */
export function textProblem(name: string, value: string): string | undefined {
  if (value.trim() === '') return `${name} may not be empty.`
  if ([...value].length > MAX_ACTION_TEXT) return `${name} may be at most ${MAX_ACTION_TEXT} characters; got ${[...value].length}.`
  if (CONTROL.test(value)) return `${name} may not contain control characters (a line break, a tab…): the cloud's signature cannot carry them.`
  return undefined
}

/**
 * A fingerprint of what an action asks for: the same `idempotencyKey` with another fingerprint is
 * another request under a reused key, refused rather than answered with the first one's action.
 */
export function argsFingerprint(args: ActionArgs): string {
  return createHash('sha256').update(JSON.stringify(args)).digest('hex')
}

import { createHash } from 'node:crypto'
import { API_VERSION_PATH } from './task-list.schema.js'

/**
 * Actions: what an operator asks the cloud to do through livegate (the word is "action", never
 * "operation", which means a GraphQL operation here). Pure: the cloud call's path and query,
 * the checks of what an operator typed, and the fingerprint that makes a retry recognisable.
 */

/** What an action asks the cloud to do. */
export type CloudActionKind = 'STOP_TASK' | 'SEND_MESSAGE'

/**
 * What an action does: one of the cloud's, or one of livegate's own that calls no cloud (a
 * webhook replay, switching an endpoint on or off, acknowledging an incident), audited and rate
 * limited the same way.
 */
export type ActionKind =
  | CloudActionKind
  | 'REPLAY_WEBHOOKS'
  | 'ENABLE_WEBHOOK_ENDPOINT'
  | 'DISABLE_WEBHOOK_ENDPOINT'
  | 'ACKNOWLEDGE_INCIDENT'

/**
 * Where an action stands. `REFUSED` is the audit's own: an attempt livegate turned away (no
 * permission, over the rate limit) before anything was sent; GraphQL shows it as `FAILED` with
 * the refusal's code in `message`.
 */
export type ActionState = 'PENDING' | 'SUCCEEDED' | 'FAILED' | 'REFUSED'

/** The cloud's operation names (operations.md). */
export const CLOUD_OPERATION: Record<CloudActionKind, 'cancel_task' | 'send_txt_msg'> = {
  STOP_TASK: 'cancel_task',
  SEND_MESSAGE: 'send_txt_msg',
}

/** The longest text an operator may send, or name a user or task with. */
export const MAX_ACTION_TEXT = 1000

/**
 * The longest idempotency key, in UTF-8 bytes (Stripe's limit too): an index entry must stay far
 * below PostgreSQL's btree limit of 2,704 bytes, whatever script the key is written in.
 */
export const MAX_IDEMPOTENCY_KEY_BYTES = 255

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

/** An action on a webhook endpoint of livegate's own: no cloud call. */
export interface WebhookActionArgs {
  kind: 'REPLAY_WEBHOOKS' | 'ENABLE_WEBHOOK_ENDPOINT' | 'DISABLE_WEBHOOK_ENDPOINT'
  /** The endpoint's one service code, or `*` for an endpoint of several (only an all-codes key reads it). */
  serviceCode: string
  endpoint: string
}

/** What a cloud action asks for, by kind. */
export type CloudActionArgs = StopArgs | MessageArgs

/** What an action asks for, by kind. */
export type ActionArgs = CloudActionArgs | WebhookActionArgs

/** The cloud call of an action: its path and its query, as signed and as sent. */
export interface CloudCall {
  /** e.g. `/api/20140928/cancel_task` (without a base URL's prefix). */
  path: string
  /** `service_code=…&task_id=…`: the values as written, NOT percent-encoded (what is signed). */
  signedQuery: string
  /** The same query with each value percent-encoded (what is sent). */
  sentQuery: string
}

/** An action's query parameters after `service_code`, in the order the upstream's demo writes them. */
export function cloudParamsOf(args: CloudActionArgs): Array<[string, string]> {
  return args.kind === 'STOP_TASK'
    ? [['task_id', args.taskId]]
    : [
        ['dst_username', args.userName],
        ['message', args.text],
        ['from_username', args.from],
      ]
}

/** The path and query of an action's cloud call, in the order the upstream's demo writes them. */
export function cloudCallOf(args: CloudActionArgs): CloudCall {
  const pairs: Array<[string, string]> = [['service_code', args.serviceCode], ...cloudParamsOf(args)]
  return {
    path: `${API_VERSION_PATH}/${CLOUD_OPERATION[args.kind]}`,
    signedQuery: pairs.map(([name, value]) => `${name}=${value}`).join('&'),
    sentQuery: pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&'),
  }
}

// C0 and C1 controls, DEL, and the Unicode line and paragraph separators: a line break breaks
// the cloud's signature (operations.md), and none belongs in a name or a one-line message.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

// A UTF-16 code unit of a surrogate pair standing alone: it has no UTF-8 form, so it can be
// neither percent-encoded for the cloud nor stored as written (PostgreSQL would keep U+FFFD).
const LONE_SURROGATE = /\p{Cs}/u

/** Why a typed value cannot be sent (a sentence naming `name`), or undefined when it can. */
export function textProblem(name: string, value: string): string | undefined {
  if (LONE_SURROGATE.test(value)) return `${name} is not well-formed Unicode text (it holds half of a surrogate pair).`
  if (value.trim() === '') return `${name} may not be empty.`
  if ([...value].length > MAX_ACTION_TEXT)
    return `${name} may be at most ${MAX_ACTION_TEXT} characters; got ${[...value].length}.`
  if (CONTROL.test(value))
    return (
      `${name} may not contain control characters (a line break, a tab…): ` + "the cloud's signature cannot carry them."
    )
  return undefined
}

const UTF8 = new TextEncoder()

/** Why a value cannot be an idempotency key, or undefined when it can. */
export function idempotencyKeyProblem(value: string): string | undefined {
  const problem = textProblem('idempotencyKey', value)
  if (problem) return problem
  const bytes = UTF8.encode(value).length
  return bytes > MAX_IDEMPOTENCY_KEY_BYTES
    ? `idempotencyKey may be at most ${MAX_IDEMPOTENCY_KEY_BYTES} bytes of UTF-8; got ${bytes}.`
    : undefined
}

/**
 * A fingerprint of what an action asks for, its reason included: the same `idempotencyKey` with
 * another fingerprint is another request under a reused key, refused rather than answered with the
 * first one's action. Without a reason it is what it was before reasons counted, so a retry
 * across an upgrade is still recognised.
 */
export function argsFingerprint(args: ActionArgs, reason?: string | null): string {
  return createHash('sha256')
    .update(JSON.stringify(reason == null ? args : { ...args, reason }))
    .digest('hex')
}

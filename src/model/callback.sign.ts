import { sign } from './signature.verify.js'

/** A callback ready to send: where, how, with which headers and body. */
export interface SignedRequest {
  method: 'GET' | 'POST'
  url: string
  headers: Record<string, string>
  body: string | undefined
}

/** What {@link signCallback} needs. */
export interface SignOptions {
  /** The full callback URL, e.g. `http://127.0.0.1:4000/callbacks`. */
  url: string
  method?: 'GET' | 'POST'
  secret: string
  /** The header prefix: `svc` gives `svc-signature` and `svc-timestamp`. */
  headerPrefix?: string
  nowMs: number
}

/**
 * Signs a notification the way the service does: a form POST signs the encoded body; a GET
 * signs the query with its values not percent-encoded and sends it encoded. Used by the `sign`
 * command, the simulator and the tests, so all three speak exactly what the receiver checks.
 */
export function signCallback(fields: Record<string, string>, options: SignOptions): SignedRequest {
  const method = options.method ?? 'POST'
  const prefix = options.headerPrefix ?? 'svc'
  const target = new URL(options.url)
  const timestamp = String(options.nowMs)
  const encoded = new URLSearchParams(fields).toString()
  const rawQuery = Object.entries(fields)
    .map(([name, value]) => `${name}=${value}`)
    .join('&')
  const signature =
    method === 'POST'
      ? sign({ path: target.pathname, query: target.search.slice(1), body: encoded, timestamp }, options.secret)
      : sign({ path: target.pathname, query: rawQuery, body: '', timestamp }, options.secret)
  const headers: Record<string, string> = { [`${prefix}-signature`]: signature, [`${prefix}-timestamp`]: timestamp }
  if (method === 'POST') headers['content-type'] = 'application/x-www-form-urlencoded'
  else target.search = encoded
  return { method, url: target.toString(), headers, body: method === 'POST' ? encoded : undefined }
}

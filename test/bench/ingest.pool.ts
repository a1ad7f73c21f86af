import { signCallback } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import type { LoadRequest } from './load.generate.js'

/** The one service whose callbacks the ingest bench signs, and its secret. */
export const BENCH_SERVICE = { serviceCode: 'TESTING', secret: 'bench-secret' }

/**
 * Signed form callbacks of every type, each distinct (its own task id), signed now so every
 * timestamp stays inside the 300 s tolerance for the run that follows.
 */
export function signPool(url: string, size: number, tag: string): LoadRequest[] {
  const target = new URL('/callbacks', url)
  const nowMs = Date.now()
  const pool: LoadRequest[] = []
  for (let task = 0; pool.length < size; task++) {
    for (const sample of Object.values(sampleCallbacks(`bench-${tag}-${task}`, BENCH_SERVICE.serviceCode))) {
      if (pool.length >= size) break
      // A client disconnect names no task, so its sample would be the same callback every time and
      // be deduplicated; a distinct session length keeps it distinct.
      const fields = 'hashed_id' in sample ? sample : { ...sample, session_duration: String(task) }
      const signed = signCallback(fields, {
        url: target.toString(),
        method: 'POST',
        secret: BENCH_SERVICE.secret,
        nowMs,
      })
      const body = Buffer.from(signed.body ?? '')
      pool.push({ path: target.pathname, headers: { ...signed.headers, 'content-length': String(body.length) }, body })
    }
  }
  return pool
}

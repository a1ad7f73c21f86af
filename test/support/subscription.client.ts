import { type Client, createClient } from 'graphql-ws'
import WebSocket from 'ws'

/** One subscription's events as they arrive, and how it ended. */
export interface Subscribed<T> {
  events: T[]
  errors: unknown[]
  /** Resolves once `count` events have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<T[]>
  /** Resolves with the socket's close code when the server closes it. */
  closed: Promise<number>
  /** Resolves once the server acknowledged the subscription's start (first event or completion). */
  dispose(): Promise<void>
}

/**
 * Subscribes over a real graphql-ws socket to the gateway's `/graphql`. The client does not
 * retry: a test sees exactly the sockets it opened.
 */
export function subscribe<T = any>(
  baseUrl: string,
  query: string,
  variables: Record<string, unknown> = {},
  connectionParams?: Record<string, unknown>,
): Subscribed<T> {
  const events: T[] = []
  const errors: unknown[] = []
  const waiters: Array<() => void> = []
  let resolveClosed: (code: number) => void = () => {}
  const closed = new Promise<number>((resolve) => {
    resolveClosed = resolve
  })
  const client: Client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    ...(connectionParams ? { connectionParams } : {}),
    lazy: false,
    // A close is what some tests wait for; it is reported through `closed`, not the console.
    onNonLazyError: () => {},
    on: { closed: (event) => resolveClosed((event as { code: number }).code) },
  })
  const unsubscribe = client.subscribe<T>(
    { query, variables },
    {
      next: (result) => {
        if (result.errors) errors.push(...result.errors)
        if (result.data) events.push(result.data as T)
        for (const wake of waiters.splice(0)) wake()
      },
      error: (error) => {
        errors.push(error)
        for (const wake of waiters.splice(0)) wake()
      },
      complete: () => {},
    },
  )
  return {
    events,
    errors,
    closed,
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (events.length < count) {
        if (errors.length > 0) throw new Error(`subscription failed: ${JSON.stringify(errors)}`)
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`waited ${timeoutMs} ms for ${count} events, got ${events.length}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 200))
          waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
      }
      return events.slice(0, count)
    },
    async dispose() {
      unsubscribe()
      await client.dispose()
    },
  }
}

/** Waits until a subscription is surely registered on the server (its operation has started). */
export async function settle(ms = 150): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

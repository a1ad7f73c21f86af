import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import { nextWriter } from './next.writer.js'
import { PendingPayload, type SharedPayload } from './shared.results.js'
import { type DirectSource, type DirectTake, SubscriberTooSlow } from '../../work/realtime/subscription.queue.js'

/** What one subscription's stream writes with. */
export interface StreamTarget {
  socket: WebSocket
  /** The TCP socket `socket` was upgraded from, when the server kept it (see {@link nextWriter}). */
  transport?: Duplex | undefined
  /** The graphql-ws operation id the client chose. */
  id: string
  /** The payload of an event for this subscription (shared with its operation's other subscribers). */
  resultOf: (event: unknown) => SharedPayload
  /** Told after each message written. */
  delivered: () => void
  /** How many messages may wait, unwritten, for a subscriber that does not read. */
  limit: number
  /** Cuts off a subscriber over the limit, or whose source's queue overflowed (4009). */
  overflow: () => void
}

const DONE: IteratorResult<never> = { value: undefined, done: true }

/**
 * What graphql-ws iterates for a subscription: it never yields. Each event of `source` is turned
 * into its shared payload and written to the socket here, as a `next` message, so an event
 * costs one execution and one serialization per operation, and per subscriber only a write of
 * bytes made once (graphql-ws would execute and stringify per subscriber; see {@link nextWriter}).
 *
 * Events are read with `next` while the source has some of its own (a replay); once it is live
 * and can hand its events over as they come (`direct`), they are written in the hub's dispatch,
 * with no promise per subscriber: that is what lets one process write to ten thousand sockets.
 *
 * graphql-ws still owns the subscription's life: when the source ends or fails, `next` settles
 * and graphql-ws sends `complete` or `error`; its `return` (a client's `complete`, a closed
 * socket) ends the source. A subscriber that does not read is cut off, as before: read with
 * `next`, the stream waits for a message stuck in the socket, which fills the source's bounded
 * queue; handed over directly, past `limit` messages stuck in the socket.
 */
export function sharedStream(
  source: AsyncIterator<unknown> & Partial<DirectSource<unknown>>,
  target: StreamTarget,
): AsyncIterableIterator<never> {
  const { socket } = target
  const next = nextWriter(socket, target.id, target.transport)
  let ended = false
  let stuck = 0
  const unstick = () => void stuck--
  // Events handed over while an earlier one's result is still being computed, in order.
  let backlog: unknown[] | undefined

  const write = (payload: Buffer, batched = false): void => {
    if (ended || socket.readyState !== socket.OPEN) return
    if (next.buffered() === 0) next.write(payload, undefined, batched)
    else if (++stuck > target.limit) return cutOff()
    else next.write(payload, unstick, batched)
    target.delivered()
  }

  const cutOff = (): void => {
    ended = true
    void source.return?.()
    target.overflow()
  }

  let settle: { resolve: (done: IteratorResult<never>) => void; reject: (error: Error) => void } | undefined
  const fail = (error: unknown): void => {
    ended = true
    void source.return?.()
    // The hub's queue for this subscriber overflowed: the same cut-off as a stuck socket's.
    if (error instanceof SubscriberTooSlow) {
      target.overflow()
      settle?.resolve(DONE)
      return
    }
    settle?.reject(error instanceof Error ? error : new Error(String(error)))
  }

  const flush = (): void => {
    while (backlog && backlog.length > 0 && !ended) {
      const payload = target.resultOf(backlog[0])
      if (payload instanceof PendingPayload) return payload.wait(flush, fail)
      backlog.shift()
      write(payload)
    }
    backlog = undefined
  }

  const take: DirectTake<unknown> = (event, batched) => {
    if (ended) return
    if (backlog) {
      backlog.push(event)
      return
    }
    const payload = target.resultOf(event)
    if (!(payload instanceof PendingPayload)) return write(payload, batched)
    backlog = [event]
    payload.wait(flush, fail)
  }
  // After a batch's last item: its messages leave together.
  take.flush = () => next.release()

  const pump = async (): Promise<IteratorResult<never>> => {
    for (;;) {
      // Handed over, the events come to `take`; this settles when the source ends.
      if (source.direct?.(take, (failure) => (failure ? fail(failure) : settle?.resolve(DONE)))) {
        return new Promise<IteratorResult<never>>((resolve, reject) => {
          settle = { resolve, reject }
        })
      }
      const step = await source.next().catch((error: unknown) => {
        if (!(error instanceof SubscriberTooSlow)) throw error
        fail(error)
        return DONE
      })
      if (step.done || ended) return DONE
      const pending = target.resultOf(step.value)
      const payload =
        pending instanceof PendingPayload
          ? await new Promise<Buffer>((resolve, reject) => pending.wait(resolve, reject))
          : pending
      // The client may have completed the subscription while the result was computed.
      if (ended || socket.readyState !== socket.OPEN) continue
      if (next.buffered() > 0) await new Promise<void>((resolve) => next.write(payload, resolve))
      else next.write(payload)
      target.delivered()
    }
  }

  let running: Promise<IteratorResult<never>> | undefined
  return {
    next: () => (running ??= pump()),
    async return() {
      ended = true
      await source.return?.()
      settle?.resolve(DONE)
      return DONE
    },
    async throw(error: unknown) {
      ended = true
      await source.return?.()
      settle?.resolve(DONE)
      throw error
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
}

import type { ApolloServerPlugin } from '@apollo/server'
import type { TaskListPoller } from '../../../work/graph/task-list.poller.js'
import type { StaleUpstream } from '../../../work/graph/upstream.watch.js'
import { inScope, type Scope } from '../auth.scope.js'

/**
 * A request's view of the task_list: resolvers never wait on it (only the poller talks to the
 * cloud); they note which polled codes their answer was folded from, and the answer then says,
 * in its `extensions`, which of those are stale.
 */
export class UpstreamAccess {
  private readonly codesRead = new Set<string>()
  /**
   * With replicas configured: the database this request read from and how far behind it was, said
   * in the answer's `extensions` (`readFrom`, `lagMs`) beside the stale report.
   */
  readFrom: { target: 'replica' | 'primary'; lagMs: number } | undefined
  /** After a mutation: the primary's WAL location, which a later query names as `extensions.readAfter`. */
  position: string | undefined

  constructor(
    private readonly poller: TaskListPoller | undefined,
    private readonly scope: Scope,
  ) {}

  /** Whether livegate polls this service code's task_list (as far as the caller may know). */
  covers(serviceCode: string): boolean {
    return inScope(this.scope, serviceCode) && (this.poller?.covers(serviceCode) ?? false)
  }

  /** Notes that the answer holds data of these codes (every polled code in scope by default). */
  read(serviceCodes?: readonly string[]): void {
    for (const code of serviceCodes ?? this.poller?.serviceCodes ?? []) {
      // Only the caller's codes: another tenant's task_list, or its state, is none of its business.
      if (this.covers(code)) this.codesRead.add(code)
    }
  }

  /** Whether this code's task_list is polled and stale (as far as the caller may know). */
  isStale(serviceCode: string): boolean {
    return this.covers(serviceCode) && (this.poller?.watch.staleAmong([serviceCode]).length ?? 0) > 0
  }

  /** The codes read whose stored state is stale. */
  stale(): StaleUpstream[] {
    if (this.codesRead.size === 0 || !this.poller) return []
    return this.poller.watch.staleAmong(this.codesRead)
  }
}

/**
 * Says in the response's `extensions.upstream.stale` which of the service codes an answer was
 * read from have a stale task_list: data answered from stored history is not an error, so
 * `errors` is left alone, and clients at their defaults keep the data.
 */
export function upstreamFreshnessPlugin<C extends { upstream: UpstreamAccess }>(): ApolloServerPlugin<C> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ contextValue, response }) {
          if (response.body.kind !== 'single') return
          const result = response.body.singleResult
          const extensions = withUpstreamFreshness(contextValue.upstream, result.extensions)
          if (extensions && extensions !== result.extensions) result.extensions = extensions
        },
      }
    },
  }
}

/** An answer's `extensions` with the stale report added when there is one (as they are when not). */
export function withUpstreamFreshness<E extends object>(upstream: UpstreamAccess, extensions?: E): E | undefined {
  const stale = upstream.stale()
  const read = upstream.readFrom
  if (read) {
    const position = upstream.position ? { position: upstream.position } : {}
    extensions = { ...extensions, readFrom: read.target, lagMs: read.lagMs, ...position } as E
  }
  if (stale.length === 0) return extensions
  const report = stale.map((code) => ({
    serviceCode: code.serviceCode,
    lastSuccessAt: code.lastSuccessAt?.toISOString() ?? null,
    consecutiveFailures: code.consecutiveFailures,
  }))
  return { ...extensions, upstream: { stale: report } } as unknown as E
}

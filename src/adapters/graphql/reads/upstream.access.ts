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
          const stale = contextValue.upstream.stale()
          if (stale.length === 0) return
          const result = response.body.singleResult
          result.extensions = {
            ...result.extensions,
            upstream: {
              stale: stale.map((code) => ({
                serviceCode: code.serviceCode,
                lastSuccessAt: code.lastSuccessAt?.toISOString() ?? null,
                consecutiveFailures: code.consecutiveFailures,
              })),
            },
          }
        },
      }
    },
  }
}

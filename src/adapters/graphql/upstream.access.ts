import type { ApolloServerPlugin } from '@apollo/server'
import type { TaskListPoller } from '../../work/task-list.poller.js'
import type { UpstreamError } from '../../model/upstream.error.js'
import { inScope, type Scope } from './auth.scope.js'

/**
 * A request's view of the live task_list: resolvers ask for a refresh before they read tasks or
 * users, and the failures are collected rather than thrown, so the answer still comes from the
 * stored history and says, in an error entry, that it may be stale.
 */
export class UpstreamAccess {
  readonly failures: UpstreamError[] = []

  constructor(
    private readonly poller: TaskListPoller | undefined,
    private readonly scope: Scope,
  ) {}

  /** Whether livegate polls this service code's task_list (as far as the caller may know). */
  covers(serviceCode: string): boolean {
    return inScope(this.scope, serviceCode) && (this.poller?.covers(serviceCode) ?? false)
  }

  /** Folds in a task_list answer no older than the cache allows, for these codes or all polled ones. */
  async refresh(serviceCodes?: readonly string[]): Promise<void> {
    const poller = this.poller
    if (!poller) return
    // Only the caller's codes: another tenant's task_list, or its failures, are none of its business.
    const codes = (serviceCodes ?? poller.serviceCodes).filter((code) => this.covers(code))
    const outcomes = await Promise.all(codes.map((code) => poller.refresh(code)))
    for (const outcome of outcomes) {
      if (!outcome.ok && !this.failures.some((known) => known.serviceCode === outcome.error.serviceCode)) this.failures.push(outcome.error)
    }
  }
}

/** The extension code of the error entry that says an answer came without a fresh task_list. */
export const UPSTREAM_UNAVAILABLE = 'UPSTREAM_UNAVAILABLE'

/**
 * Adds one error entry per failed task_list to a response that still carries its data, with the
 * service code, the failure kind and the service's `ret` in its extensions.
 */
export function upstreamFailuresPlugin<C extends { upstream: UpstreamAccess }>(): ApolloServerPlugin<C> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ contextValue, response }) {
          const failures = contextValue.upstream.failures
          if (failures.length === 0 || response.body.kind !== 'single') return
          const result = response.body.singleResult
          result.errors = [
            ...(result.errors ?? []),
            ...failures.map((failure) => ({
              message: `The task list of ${failure.serviceCode} could not be read (${failure.kind}); this answer comes from stored history.`,
              extensions: { code: UPSTREAM_UNAVAILABLE, serviceCode: failure.serviceCode, kind: failure.kind, ret: failure.ret ?? null },
            })),
          ]
        },
      }
    },
  }
}

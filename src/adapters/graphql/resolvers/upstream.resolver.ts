import { eq } from 'drizzle-orm'
import { upstreamStatus } from '../../../storage/graph.table.js'
import { inScope } from '../auth.scope.js'
import type { GraphqlContext } from '../context.js'
import { refuseNul } from '../graphql.errors.js'
import { Arg, Ctx, Query, Resolver } from '../type-graphql.shim.js'
import { UpstreamStatus } from '../types/upstream.type.js'

@Resolver()
export class UpstreamResolver {
  @Query(() => UpstreamStatus, { description: 'The health of a service code\'s task list: the last success, the last error and its ret.' })
  async upstream(@Arg('serviceCode', () => String) serviceCode: string, @Ctx() { db, upstream, scope }: GraphqlContext): Promise<UpstreamStatus> {
    refuseNul({ serviceCode }, 'serviceCode')
    // Another tenant's code reads as one livegate knows nothing of: its existence is not told.
    const [row] = inScope(scope, serviceCode) ? await db.select().from(upstreamStatus).where(eq(upstreamStatus.serviceCode, serviceCode)) : []
    const lastError =
      row?.lastErrorAt && row.lastErrorKind
        ? { at: row.lastErrorAt, kind: row.lastErrorKind, message: row.lastErrorMessage ?? '', ret: row.lastRet }
        : null
    return {
      serviceCode,
      configured: upstream.covers(serviceCode),
      healthy: row?.lastSuccessAt != null && (row.lastErrorAt == null || row.lastSuccessAt >= row.lastErrorAt),
      lastPollAt: row?.lastPollAt ?? null,
      lastSuccessAt: row?.lastSuccessAt ?? null,
      lastError,
      lastLatencyMs: row?.lastLatencyMs ?? null,
      taskCount: row?.taskCount ?? null,
      userCount: row?.userCount ?? null,
    }
  }
}

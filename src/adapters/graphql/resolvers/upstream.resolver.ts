import type { UpstreamStatusRow } from '../../../storage/tables/graph.table.js'
import { judgeUpstream, readUpstreamStatus, staleAfterMs } from '../../../storage/history/upstream-status.statements.js'
import { inScope, requireWholeService } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { Arg, Ctx, FieldResolver, Query, Resolver, Root } from '../type-graphql.shim.js'
import { readArchiveStatus } from '../../../storage/history/archive-status.statements.js'
import { ArchiveStatus, UpstreamStatus, upstreamErrorKind } from '../types/upstream.type.js'

@Resolver()
export class UpstreamResolver {
  @Query(() => UpstreamStatus, {
    description:
      "How fresh a service code's task list is: the last success, the last error and its ret, whether it is stale.",
  })
  async upstream(
    @Arg('serviceCode', () => String, {
      description: 'A service code the caller may read; any other reads as one livegate knows nothing of.',
    })
    serviceCode: string,
    @Ctx() context: GraphqlContext,
  ): Promise<UpstreamStatus> {
    requireWholeService(context.scope, "a service code's upstream")
    // Another tenant's code reads as one livegate knows nothing of: its existence is not told.
    const [status] = await statusesOf(context, inScope(context.scope, serviceCode) ? [serviceCode] : [])
    return status ?? statusOf(context, serviceCode, undefined, new Date())
  }

  @Query(() => [UpstreamStatus], {
    description: 'How fresh the task list of every service code the caller may read is, in configuration order.',
  })
  async upstreams(@Ctx() context: GraphqlContext): Promise<UpstreamStatus[]> {
    requireWholeService(context.scope, "the service codes' upstream")
    const codes = context.config.services
      .map((service) => service.serviceCode)
      .filter((code) => inScope(context.scope, code))
    return statusesOf(context, codes)
  }
}

async function statusesOf(context: GraphqlContext, serviceCodes: readonly string[]): Promise<UpstreamStatus[]> {
  const rows = await readUpstreamStatus(context.db, serviceCodes)
  const now = new Date()
  return serviceCodes.map((code) => statusOf(context, code, rows.get(code), now))
}

function statusOf(
  context: GraphqlContext,
  serviceCode: string,
  row: UpstreamStatusRow | undefined,
  now: Date,
): UpstreamStatus {
  const configured = context.upstream.covers(serviceCode)
  const { healthy, stale } = judgeUpstream(row, now, configured ? staleAfterMs(context.config.upstream) : 0)
  return {
    serviceCode,
    configured,
    healthy,
    stale,
    consecutiveFailures: row?.consecutiveFailures ?? 0,
    lastPollAt: row?.lastPollAt ?? null,
    lastSuccessAt: row?.lastSuccessAt ?? null,
    nextPollAt: row?.nextPollAt ?? null,
    lastError:
      row?.lastErrorAt && row.lastErrorKind
        ? {
            at: row.lastErrorAt,
            kind: upstreamErrorKind(row.lastErrorKind),
            message: row.lastErrorMessage ?? '',
            ret: row.lastRet,
          }
        : null,
    lastLatencyMs: row?.lastLatencyMs ?? null,
    taskCount: row?.taskCount ?? null,
    userCount: row?.userCount ?? null,
  }
}

@Resolver(() => UpstreamStatus)
export class UpstreamArchiveResolver {
  @FieldResolver(() => ArchiveStatus, {
    description: "How fresh the code's archive (`list_files`) is, beside the task list's.",
  })
  async archive(@Root() status: UpstreamStatus, @Ctx() { db, config, scope }: GraphqlContext): Promise<ArchiveStatus> {
    const row = inScope(scope, status.serviceCode)
      ? (await readArchiveStatus(db, [status.serviceCode])).get(status.serviceCode)
      : undefined
    const service = config.services.find((candidate) => candidate.serviceCode === status.serviceCode)
    const configured = Boolean(service?.baseUrl && service.secrets.length > 0 && config.archive.pollIntervalMs > 0)
    const staleMs = configured ? 3 * config.archive.pollIntervalMs + config.upstream.timeoutMs : 0
    const { healthy, stale } = judgeUpstream(row, new Date(), staleMs)
    const lastError =
      row?.lastErrorAt && row.lastErrorKind
        ? {
            at: row.lastErrorAt,
            kind: upstreamErrorKind(row.lastErrorKind),
            message: row.lastErrorMessage ?? '',
            ret: row.lastRet,
          }
        : null
    return {
      configured,
      healthy,
      stale,
      consecutiveFailures: row?.consecutiveFailures ?? 0,
      lastPollAt: row?.lastPollAt ?? null,
      lastSuccessAt: row?.lastSuccessAt ?? null,
      lastError,
      fileCount: row?.fileCount ?? null,
    }
  }
}

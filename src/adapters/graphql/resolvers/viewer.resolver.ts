import { LOCAL_CALLER, type Scope } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { Ctx, Query, Resolver } from '../type-graphql.shim.js'
import { Viewer, ViewerMethod } from '../types/viewer.type.js'

const METHODS = { key: ViewerMethod.KEY, token: ViewerMethod.TOKEN, local: ViewerMethod.LOCAL } as const

/** `Query.viewer`: the caller as the request's admission knew it (access.gate.ts); it reads nothing else. */
@Resolver()
export class ViewerResolver {
  @Query(() => Viewer, {
    description:
      'Who is asking: the subject, name and issuer of a token, or the name of a key; the service codes, ' +
      'permissions and broadcaster it is scoped to; when it expires.',
  })
  viewer(@Ctx() context: GraphqlContext): Viewer {
    return viewerOf(context.scope)
  }
}

/** The viewer of a scope: a scope made with no caller (a test's, by hand) reads as its key, or the local user. */
export function viewerOf(scope: Scope): Viewer {
  const caller = scope.caller ?? (scope.keyName ? { method: 'key' as const, subject: scope.keyName } : LOCAL_CALLER)
  return {
    method: METHODS[caller.method],
    subject: caller.subject,
    name: caller.name ?? null,
    issuer: caller.issuer ?? null,
    serviceCodes: scope.kind === 'all' ? null : [...scope.serviceCodes],
    can: scope.canOperate ? ['operate'] : [],
    userName: scope.userName ?? null,
    expiresAt: caller.expiresAt ?? null,
    keyName: scope.keyName ?? null,
    canOperate: scope.canOperate,
  }
}

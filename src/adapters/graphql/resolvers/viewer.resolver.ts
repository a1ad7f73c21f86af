import type { GraphqlContext } from '../reads/request.context.js'
import { Ctx, Query, Resolver } from '../type-graphql.shim.js'
import { Viewer, viewerOf } from '../types/viewer.type.js'

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

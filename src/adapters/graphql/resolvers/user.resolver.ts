import { countUsers, listUsers } from '../../../storage/user.queries.js'
import type { UserNode } from '../../../fold/graph.model.js'
import { deriveUser } from '../../../fold/user.fold.js'
import { allowedCodes } from '../auth.scope.js'
import type { GraphqlContext } from '../context.js'
import { refuseNul } from '../graphql.errors.js'
import { type ConnectionData, pageWindow, rowIdCursor, toConnection } from '../pagination.js'
import { Arg, Ctx, Int, Query, Resolver } from '../type-graphql.shim.js'
import { User, UserConnection, UserFilter } from '../types/user.type.js'

const userCursor = rowIdCursor('u1')

@Resolver(() => User)
export class UserResolver {
  @Query(() => UserConnection, { description: 'Users: the task list\'s, and those notifications name; most recently known first.' })
  async users(
    @Arg('filter', () => UserFilter, { nullable: true }) filter: UserFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true }) after: string | null | undefined,
    @Ctx() { db, config, upstream, scope }: GraphqlContext,
  ): Promise<ConnectionData<UserNode>> {
    const query = { serviceCode: filter?.serviceCode, userName: filter?.userName, online: filter?.online, allowedServiceCodes: allowedCodes(scope) }
    refuseNul({ serviceCode: query.serviceCode, userName: query.userName }, 'filter')
    const window = pageWindow({ first, after }, config.graphql, userCursor)
    upstream.read(query.serviceCode ? [query.serviceCode] : undefined)
    const rows = await listUsers(db, query, window.after, window.fetch)
    return toConnection(rows, window, {
      codec: userCursor,
      keyOf: (row) => row.id,
      toNode: (row) => deriveUser(row.state),
      countAll: () => countUsers(db, query),
    })
  }
}

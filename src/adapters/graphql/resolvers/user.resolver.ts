import { countUsers, listUsers } from '../../../storage/graph/user.queries.js'
import type { UserNode } from '../../../fold/graph.model.js'
import { deriveTask } from '../../../fold/task.derive.js'
import { deriveUser } from '../../../fold/user.fold.js'
import { allowedCodes, allowedUser } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { userGlobalId } from '../reads/node.view.js'
import {
  type ConnectionData,
  PAGE_ARGUMENTS,
  pageWindow,
  rowIdCursor,
  taskCursor,
  toConnection,
} from '../connection.pagination.js'
import { Arg, Ctx, FieldResolver, ID, Int, Query, Resolver, Root } from '../type-graphql.shim.js'
import { TaskConnection, TaskFilter } from '../types/task.type.js'
import { User, UserConnection, UserFilter } from '../types/user.type.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import { taskQuery } from './task.resolver.js'

const userCursor = rowIdCursor('u1')

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS

@Resolver(() => User)
export class UserResolver {
  @Query(() => UserConnection, {
    description: "Users: the task list's, and those notifications name; most recently known first.",
  })
  async users(
    @Arg('filter', () => UserFilter, {
      nullable: true,
      description: 'Which users; all the caller may read when absent.',
    })
    filter: UserFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, loaders, upstream, scope }: GraphqlContext,
  ): Promise<ConnectionData<UserNode>> {
    const query = {
      serviceCode: filter?.serviceCode,
      userName: filter?.userName,
      online: filter?.online,
      allowedServiceCodes: allowedCodes(scope),
      allowedUserName: allowedUser(scope),
    }
    const window = pageWindow({ first, after }, config.graphql, userCursor)
    upstream.read(query.serviceCode ? [query.serviceCode] : undefined)
    const rows = await listUsers(db, query, window.after, window.fetch)
    for (const row of rows) loaders.user.prime(row, row)
    return toConnection(rows, window, {
      codec: userCursor,
      keyOf: (row) => row.id,
      toNode: (row) => deriveUser(row.state),
      countAll: () => countUsers(db, query),
    })
  }

  @FieldResolver(() => ID, {
    description:
      'An opaque global id (of the service code and user name): the same across restarts and on every instance; ' +
      'pass it to `node(id:)`.',
  })
  id(@Root() user: UserNode): string {
    return userGlobalId(user)
  }

  @FieldResolver(() => TaskConnection, {
    description: "The tasks this user started (their `userName` is exactly this user's), newest start first.",
  })
  async tasks(
    @Root() user: UserNode,
    @Arg('filter', () => TaskFilter, { nullable: true, description: "Which of the user's tasks; all when absent." })
    filter: TaskFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { config, loaders, scope }: GraphqlContext,
  ): Promise<ConnectionData<TaskView>> {
    const window = pageWindow({ first, after }, config.graphql, taskCursor)
    // The scope is added by the loaders; leaving it out here lets one loader serve every user.
    const { allowedServiceCodes: _scope, allowedUserName: _user, ...query } = taskQuery(filter, scope)
    const owner = { serviceCode: user.serviceCode, userName: user.userName }
    const rows = await loaders.tasksOfUser({ filter: query, after: window.after, fetch: window.fetch }).load(owner)
    for (const row of rows) loaders.task.prime(row, row)
    return toConnection(rows, window, {
      codec: taskCursor,
      keyOf: (row) => ({ sortAt: row.sortAt.getTime(), id: row.id }),
      toNode: (row) => deriveTask(row.state),
      countAll: () => loaders.taskCountOfUser(query).load(owner),
    })
  }
}

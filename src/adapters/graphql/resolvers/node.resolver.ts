import type { GraphqlContext } from '../reads/request.context.js'
import { requireGlobalId } from '../global.id.js'
import { badUserInput } from '../graphql.errors.js'
import { loadNode, type NodeValue } from '../reads/node.view.js'
import { Arg, Ctx, ID, Query, Resolver } from '../type-graphql.shim.js'
import { Node } from '../types/node.type.js'

/** `node` and `nodes`: any object with a global id, fetched again by it (Relay's refetch, a cache's miss). */
@Resolver()
export class NodeResolver {
  @Query(() => Node, {
    nullable: true,
    description: 'The object with this global id; null when there is none the caller may read.',
  })
  async node(
    @Arg('id', () => ID, { description: 'A global id (`id` of a Task, User, Output or Notification).' }) id: string,
    @Ctx() context: GraphqlContext,
  ): Promise<NodeValue | null> {
    return loadNode(context, requireGlobalId(id, 'id'))
  }

  @Query(() => [Node], {
    nullable: 'items',
    description:
      'The objects with these global ids, in the order asked; null for each the caller cannot read. One ' +
      'statement per kind of object, however many ids.',
  })
  async nodes(
    @Arg('ids', () => [ID], { description: 'Global ids; at most as many as a page (`first`) may hold.' }) ids: string[],
    @Ctx() context: GraphqlContext,
  ): Promise<Array<NodeValue | null>> {
    const limit = context.config.graphql.maxPageSize
    if (ids.length > limit) throw badUserInput(`ids may list at most ${limit} ids; got ${ids.length}.`, 'ids')
    const parsed = ids.map((id) => requireGlobalId(id, 'ids'))
    return Promise.all(parsed.map((id) => loadNode(context, id)))
  }
}

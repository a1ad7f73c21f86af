import type { ConnectionData } from '../connection.pagination.js'
import { type ClassType, Field, Int, ObjectType } from '../type-graphql.shim.js'
import { PageInfo } from './page-info.type.js'

/**
 * The base of a Relay connection type over `Node`: declares `<name>Edge { cursor node }` and
 * returns an abstract class with `edges`, `pageInfo` and `totalCount`. Declare the concrete type
 * by extending it, so its name is written where it is used:
 *
 * ```ts
 * @ObjectType('TaskConnection', { simpleResolvers: true })
 * export class TaskConnection extends ConnectionType('Task', () => Task) {}
 * ```
 *
 * A resolver returns {@link ConnectionData} (from `toConnection`); `totalCount` calls its
 * `countAll` only when the client asks for it.
 */
export function ConnectionType<TNode extends object>(name: string, nodeType: () => ClassType<TNode> | Function) {
  @ObjectType(`${name}Edge`, {
    simpleResolvers: true,
    description: `One ${name} in a page, with the cursor that points at it.`,
  })
  class Edge {
    @Field(() => String, { description: 'Pass as `after` to get the items after this one.' })
    cursor!: string

    @Field(nodeType, { description: `The ${name}.` })
    node!: TNode
  }

  // Named, yet never in the schema: only the concrete subclass is reachable from a resolver.
  @ObjectType(`${name}ConnectionBase`, { simpleResolvers: true })
  abstract class Connection implements ConnectionData<TNode> {
    @Field(() => [Edge], { description: `The ${name} items of this page, in the connection's order.` })
    edges!: Array<{ cursor: string; node: TNode }>

    @Field(() => PageInfo, { description: 'Whether another page follows, and the cursor to ask for it.' })
    pageInfo!: PageInfo

    // Not a GraphQL field: the count query, run only when totalCount is selected.
    countAll!: () => Promise<number>

    @Field(() => Int, { description: `How many ${name} items match, on every page together.` })
    totalCount(): Promise<number> {
      return this.countAll()
    }
  }

  return Connection
}

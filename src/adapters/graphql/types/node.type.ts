import { Field, ID, InterfaceType } from '../type-graphql.shim.js'

/** What `Node` values carry so `node`/`nodes` can say which type they are; see {@link nodeTypeName}. */
export const NODE_TYPE = Symbol('livegate.nodeType')

/**
 * The Relay `Node` interface: anything with a global id, fetched again with `node(id:)`. Its
 * `resolveType` reads the type `node`/`nodes` tagged the value with (they know it from the id);
 * a notification, the one `Node` also reached through `Notification`, resolves by its own
 * interface.
 */
@InterfaceType('Node', {
  description: 'An object with a global id: fetch it again with `node(id:)`, and use the id as its cache key.',
  resolveType: (value: object) => nodeTypeName(value),
})
export abstract class Node {
  @Field(() => ID, {
    description: 'An opaque global id: the same across restarts and on every gateway instance; pass it to `node(id:)`.',
  })
  id!: string
}

/** The object type of a value `node` or `nodes` returned. */
export function nodeTypeName(value: object): string | undefined {
  return (value as { [NODE_TYPE]?: string })[NODE_TYPE]
}

/** A value tagged with its object type, for {@link nodeTypeName}. */
export function tagNode<T extends object>(value: T, typeName: string): T {
  return Object.assign(Object.create(Object.getPrototypeOf(value) as object | null) as T, value, {
    [NODE_TYPE]: typeName,
  })
}

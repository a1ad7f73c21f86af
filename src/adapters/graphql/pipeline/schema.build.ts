import { type GraphQLSchema, isInterfaceType, lexicographicSortSchema, printSchema } from 'graphql'
import { resolvers as allResolvers } from '../resolvers/resolver.list.js'
import { type NonEmptyArray, buildSchema } from '../type-graphql.shim.js'
import { nodeTypeName } from '../types/node.type.js'
import { notificationTypeName } from '../types/notification.type.js'
import { SCALARS_MAP } from '../types/scalars.type.js'

/**
 * Builds the GraphQL schema from resolver classes: by default every resolver in
 * `resolvers/resolver.list.ts`. The schema is the same whatever the configuration, so the emitted
 * contract (schema/schema.graphql) never depends on a config file.
 */
export async function buildGraphqlSchema(resolvers: NonEmptyArray<Function> = allResolvers): Promise<GraphQLSchema> {
  const schema = await buildSchema({
    resolvers,
    scalarsMap: SCALARS_MAP,
    // class-validator is not installed; arguments are checked by their resolvers.
    validate: false,
    // type-graphql insists on a PubSub once a schema has subscriptions, even when each one brings
    // its own `subscribe` (ours read the realtime engine); this one is never reached.
    pubSub: {
      publish: () => {
        throw new Error("livegate publishes through its realtime engine, not type-graphql's PubSub")
      },
      subscribe: () => {
        throw new Error("livegate subscriptions read the realtime engine, not type-graphql's PubSub")
      },
    },
  })
  // type-graphql wraps resolveType in an async function; graphql-jit needs the type name at once.
  const notification = schema.getType('Notification')
  if (isInterfaceType(notification)) notification.resolveType = notificationTypeName
  describeRoot(schema)
  resolveEventsAsTheyAre(schema)
  const node = schema.getType('Node')
  if (isInterfaceType(node)) node.resolveType = nodeTypeName
  return schema
}

/**
 * Every subscription field resolves to its event as is (its arguments only choose the events, in
 * `subscribe`). type-graphql's resolver reads the arguments first through an async validation
 * step, which made every shared result a promise: thousands of subscribers each waited on it
 * (a waiter and a backlog apiece) instead of writing bytes computed at once. The identity is what
 * those methods return, without the promise.
 */
function resolveEventsAsTheyAre(schema: GraphQLSchema): void {
  for (const field of Object.values(schema.getSubscriptionType()?.getFields() ?? {}))
    field.resolve = (event: unknown) => event
}

// type-graphql names the root types but gives them no description.
function describeRoot(schema: GraphQLSchema): void {
  const query = schema.getQueryType()
  if (query)
    query.description =
      'What can be read: tasks, users and notifications as a graph (each with a global `id`, fetched again with ' +
      "`node`), dashboard counts, and the task list's health."
  const mutation = schema.getMutationType()
  if (mutation)
    mutation.description =
      'What can be done: actions on the cloud (stop a task, message a broadcaster) and webhook steering (replay, ' +
      'switch an endpoint on or off), each for API keys with `"can": ["operate"]` (or, with no keys configured, ' +
      'the local user); actions are recorded in `actions`.'
  const subscription = schema.getSubscriptionType()
  if (subscription)
    subscription.description =
      'What is pushed over graphql-ws at /graphql: stored notifications as they are committed, tasks as they ' +
      'change, and actions.'
}

/**
 * The schema as committed in schema/schema.graphql: SDL with types and fields in name order, so
 * a diff shows what changed rather than where a resolver was registered.
 */
export function printGraphqlSchema(schema: GraphQLSchema): string {
  return printSchema(lexicographicSortSchema(schema))
}

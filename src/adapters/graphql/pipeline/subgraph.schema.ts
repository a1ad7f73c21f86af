import { buildSubgraphSchema } from '@apollo/subgraph'
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/index.js'
import {
  type ConstDirectiveNode,
  type DocumentNode,
  type GraphQLAbstractType,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  graphql,
  isAbstractType,
  isEnumType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  Kind,
  parse,
  visit,
} from 'graphql'
import type { GraphqlContext } from '../reads/request.context.js'
import { type NodeTypeName, parseGlobalId } from '../global.id.js'
import { loadNode, type NodeValue } from '../reads/node.view.js'
import { printGraphqlSchema } from './schema.build.js'
import { nodeTypeName } from '../types/node.type.js'

/**
 * livegate as an Apollo Federation 2 subgraph. The SDL type-graphql emits gets a `@link` to
 * federation and `@key`s on the entities, and `@apollo/subgraph` builds the schema from it with
 * the resolvers type-graphql made (as type-graphql's own federation example does), adding
 * `_service` and `_entities`.
 *
 * Entities are keyed by their global `id` (what `node(id)` takes); `Task` also by the cloud's own
 * key, `serviceCode taskId`, so a subgraph that knows only the cloud's id can join. A reference
 * resolves exactly as `node(id)` does: through the request's loaders (a batch of references is
 * one statement per kind) and within the caller's scope (another code's entity is null).
 */

/** The federation version linked, and the directives taken from it. */
const FEDERATION_LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])'

/** The entity types and their keys; every implementation of an entity interface is keyed as it is. */
const ENTITY_KEYS: Record<string, readonly string[]> = {
  Task: ['id', 'serviceCode taskId'],
  User: ['id'],
  Output: ['id'],
  Notification: ['id'],
}

/** The SDL of `schema` with the federation link and the entities' keys. */
export function subgraphTypeDefs(schema: GraphQLSchema): DocumentNode {
  const keys = entityKeys(schema)
  const withKeys = visit(parse(printGraphqlSchema(schema)), {
    ObjectTypeDefinition: (node) => ({
      ...node,
      directives: [...(node.directives ?? []), ...keyDirectives(keys.get(node.name.value))],
    }),
    InterfaceTypeDefinition: (node) => ({
      ...node,
      directives: [...(node.directives ?? []), ...keyDirectives(keys.get(node.name.value))],
    }),
  })
  return { ...withKeys, definitions: [...parse(FEDERATION_LINK).definitions, ...withKeys.definitions] }
}

/**
 * The subgraph schema of livegate's schema: the same types, fields and resolvers, with
 * `_service` and `_entities`. `schema` is what {@link buildGraphqlSchema} returns.
 */
export function buildSubgraph(schema: GraphQLSchema): GraphQLSchema {
  return buildSubgraphSchema({ typeDefs: subgraphTypeDefs(schema), resolvers: subgraphResolvers(schema) })
}

type FieldResolver = GraphQLFieldResolver<unknown, unknown>
type FieldResolvers = Record<string, FieldResolver | { resolve?: FieldResolver; subscribe?: FieldResolver }>

/**
 * The resolvers of `schema` as a resolver map for the SDL built from it: each field's `resolve` and
 * `subscribe`, each scalar, each enum's values, how an abstract type tells its object type, and
 * each entity's `__resolveReference` (what type-graphql's `createResolversMap` gives, typed).
 */
function subgraphResolvers(schema: GraphQLSchema): GraphQLResolverMap<unknown> {
  const keys = entityKeys(schema)
  const map: GraphQLResolverMap<unknown> = {}
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) continue
    if (isScalarType(type)) map[type.name] = type
    else if (isEnumType(type)) map[type.name] = enumValues(type.getValues())
    else if (isObjectType(type) || isInterfaceType(type) || isAbstractType(type)) {
      const fields: FieldResolvers = {}
      if (!isAbstractType(type) || isInterfaceType(type)) {
        for (const field of Object.values(type.getFields())) fieldResolvers(fields, field)
      }
      if (isAbstractType(type)) fields.__resolveType = typeResolver(schema, type)
      if ((keys.get(type.name) ?? []).length > 0) fields.__resolveReference = referenceResolver(type.name)
      map[type.name] = fields
    }
  }
  return map
}

function fieldResolvers(fields: FieldResolvers, field: GraphQLField<unknown, unknown>): void {
  if (field.subscribe)
    fields[field.name] = { subscribe: field.subscribe, ...(field.resolve && { resolve: field.resolve }) }
  else if (field.resolve) fields[field.name] = field.resolve
}

function enumValues(values: readonly { name: string; value: unknown }[]): Record<string, string | number> {
  const out: Record<string, string | number> = {}
  for (const { name, value } of values) if (typeof value === 'string' || typeof value === 'number') out[name] = value
  return out
}

// Called by graphql as a type resolver (value, context, info); the map's type names it as a field's. The name
// comes at once where the type says it (graphql-jit needs it so), else from its objects' isTypeOf.
function typeResolver(schema: GraphQLSchema, type: GraphQLAbstractType) {
  const { resolveType } = type
  if (resolveType) {
    return (value: unknown, context: unknown, info: unknown) =>
      resolveType(value, context, info as GraphQLResolveInfo, type)
  }
  return async (value: unknown, context: unknown, info: unknown): Promise<string | undefined> => {
    for (const object of schema.getPossibleTypes(type)) {
      if (await object.isTypeOf?.(value, context, info as GraphQLResolveInfo)) return object.name
    }
    return undefined
  }
}

/** What `_service { sdl }` answers: the subgraph SDL a composer reads (schema/subgraph.graphql). */
export async function printSubgraphSdl(schema: GraphQLSchema): Promise<string> {
  const answer = await graphql({ schema: buildSubgraph(schema), source: '{ _service { sdl } }' })
  const sdl = (answer.data as { _service?: { sdl?: string } } | null | undefined)?._service?.sdl
  if (typeof sdl !== 'string') throw new Error(`the subgraph schema has no SDL: ${JSON.stringify(answer.errors)}`)
  return sdl.trimEnd()
}

// Each entity type with its keys; an object type implementing an entity interface takes the interface's.
function entityKeys(schema: GraphQLSchema): Map<string, readonly string[]> {
  const keys = new Map(Object.entries(ENTITY_KEYS))
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || keys.has(type.name)) continue
    const inherited = type.getInterfaces().find((face) => face.name !== 'Node' && keys.has(face.name))
    if (inherited) keys.set(type.name, keys.get(inherited.name) ?? [])
  }
  return keys
}

function keyDirectives(fields: readonly string[] | undefined): ConstDirectiveNode[] {
  return (fields ?? []).map((value) => ({
    kind: Kind.DIRECTIVE,
    name: { kind: Kind.NAME, value: 'key' },
    arguments: [
      { kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: 'fields' }, value: { kind: Kind.STRING, value } },
    ],
  }))
}

/** The global-id type an entity type's `id` key names. */
function idTypeOf(typeName: string): NodeTypeName {
  return typeName in ENTITY_KEYS ? (typeName as NodeTypeName) : 'Notification'
}

/**
 * `__resolveReference` of one entity type. A representation is not a client's argument: one that
 * names nothing this caller may read (malformed, another type's id, another code's entity) is
 * null, never an error, as `node(id)` answers for an id out of scope.
 */
function referenceResolver(typeName: string) {
  const idType = idTypeOf(typeName)
  // Called as (representation, context); the resolver map's type names it as a field's (source, args).
  return async (representation: unknown, context: GraphqlContext): Promise<NodeValue | null> => {
    let found: NodeValue | null = null
    const reference: Partial<Record<string, unknown>> =
      typeof representation === 'object' && representation !== null ? { ...representation } : {}
    if (typeof reference.id === 'string') {
      const id = parseGlobalId(reference.id)
      if (id?.type === idType) found = await loadNode(context, id)
    } else if (typeName === 'Task' && isKeyPart(reference.serviceCode) && isKeyPart(reference.taskId)) {
      found = await loadNode(context, { type: 'Task', key: [reference.serviceCode, reference.taskId] })
    }
    // A notification asked for as one kind (`LiveEndNotification`) is null when it is of another.
    if (found && typeName !== idType && nodeTypeName(found) !== typeName) return null
    return found
  }
}

// PostgreSQL text cannot hold NUL: such a key can name no row.
function isKeyPart(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && !value.includes('\u0000')
}

import {
  type GraphQLSchema,
  getNamedType,
  isAbstractType,
  isIntrospectionType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql'

/** What a normalizing client cache needs to know of the schema. */
export interface CacheShape {
  /** Each interface and union, and the object types that can stand for it. */
  possibleTypes: Record<string, string[]>
  /** The fields that identify each object type; null for a type with no identity of its own. */
  keyFields: Record<string, string[] | null>
}

/**
 * Reads the cache shape from a schema. A type is keyed by `id` when it has a non-null `id: ID!`
 * (every Node does); any other object type is a value kept inside its parent. The root types
 * are left out: clients key them by name.
 */
export function cacheShape(schema: GraphQLSchema): CacheShape {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter(Boolean))
  const types = Object.values(schema.getTypeMap())
    .filter((type) => !isIntrospectionType(type))
    .sort((a, b) => a.name.localeCompare(b.name, 'en'))
  const possibleTypes: CacheShape['possibleTypes'] = {}
  const keyFields: CacheShape['keyFields'] = {}
  for (const type of types) {
    if (isAbstractType(type)) {
      possibleTypes[type.name] = schema
        .getPossibleTypes(type)
        .map((member) => member.name)
        .sort((a, b) => a.localeCompare(b, 'en'))
    } else if (isObjectType(type) && !roots.has(type)) {
      const id = type.getFields().id
      const keyed =
        id !== undefined &&
        isNonNullType(id.type) &&
        isScalarType(getNamedType(id.type)) &&
        getNamedType(id.type).name === 'ID'
      keyFields[type.name] = keyed ? ['id'] : null
    }
  }
  return { possibleTypes, keyFields }
}

/**
 * The cache shape as the TypeScript module committed at schema/possible-types.ts, ready for
 * Apollo Client's `possibleTypes` and `typePolicies` and urql graphcache's `possibleTypes` and `keys`.
 */
export function printPossibleTypes(schema: GraphQLSchema): string {
  const { possibleTypes, keyFields } = cacheShape(schema)
  // One type a line, so that a change to the schema shows as a change to its lines.
  const literal = (record: Record<string, unknown>) =>
    [
      '{',
      ...Object.entries(record).map(
        ([name, value]) => `  ${name}: ${JSON.stringify(value).replaceAll('","', '", "')},`,
      ),
      '}',
    ].join('\n')
  return [
    '// Generated from the schema by `npm run schema:emit` (`livegate schema possible-types`): do not edit.',
    '',
    '/** Each interface and union of the schema, and the object types that can stand for it. */',
    `export const possibleTypes: Record<string, string[]> = ${literal(possibleTypes)}`,
    '',
    '/**',
    ' * The fields that identify each object type in a normalized cache. `null`: the type has no',
    ' * identity of its own, and is kept inside the object that holds it.',
    ' */',
    `export const keyFields: Record<string, string[] | null> = ${literal(keyFields)}`,
  ].join('\n')
}

import { GraphQLError, GraphQLScalarType, type ValueNode } from 'graphql'
import { DateTimeResolver, JSONResolver, SafeIntResolver } from 'graphql-scalars'
import { isStorableTime, STORABLE_TIMES } from '../graphql.errors.js'

/**
 * The custom scalars of the schema, taken from graphql-scalars so clients find them documented
 * there. Use them in type functions: `@Field(() => DateTimeScalar)`.
 */

/**
 * `DateTime`: an RFC 3339 time at UTC; a JavaScript `Date` on our side. graphql-scalars' own, but
 * taking only the years 1 to 9999: every time an argument gives is compared with stored rows, and
 * PostgreSQL refuses year 0 and JavaScript's six-digit years, an error of ours rather than the
 * caller's. Refused here, every argument and input field of the type is answered as bad input,
 * over either transport, before any resolver runs.
 */
export const DateTimeScalar = new GraphQLScalarType<Date, Date>({
  ...DateTimeResolver.toConfig(),
  parseValue: (value) => storable(DateTimeResolver.parseValue(value) as Date),
  parseLiteral: (node: ValueNode, variables) => storable(DateTimeResolver.parseLiteral(node, variables) as Date, node),
})

function storable(value: Date, node?: ValueNode): Date {
  if (isStorableTime(value.getTime())) return value
  throw new GraphQLError(`DateTime must be a time from ${STORABLE_TIMES}.`, node ? { nodes: node } : {})
}

/** `JSON`: any JSON value; for data passed through exactly as the service sent it. */
export const JSONScalar = JSONResolver

/**
 * `SafeInt`: a whole number up to 2^53 - 1. Byte counts (`input_bytes`, `http_output_bytes`)
 * pass 2^31, which GraphQL's `Int` cannot carry.
 */
export const SafeIntScalar = SafeIntResolver

/** For buildSchema: a stray `() => Date` still means our `DateTime`, not a second date scalar. */
export const SCALARS_MAP = [{ type: Date, scalar: DateTimeScalar }]

import { DateTimeResolver, JSONResolver, SafeIntResolver } from 'graphql-scalars'

/**
 * The custom scalars of the schema, taken from graphql-scalars so clients find them documented
 * there. Use them in type functions: `@Field(() => DateTimeScalar)`.
 */

/** `DateTime`: an RFC 3339 time at UTC; a JavaScript `Date` on our side. */
export const DateTimeScalar = DateTimeResolver

/** `JSON`: any JSON value; for data passed through exactly as the service sent it. */
export const JSONScalar = JSONResolver

/**
 * `SafeInt`: a whole number up to 2^53 - 1. Byte counts (`input_bytes`, `http_output_bytes`)
 * pass 2^31, which GraphQL's `Int` cannot carry.
 */
export const SafeIntScalar = SafeIntResolver

/** For buildSchema: a stray `() => Date` still means our `DateTime`, not a second date scalar. */
export const SCALARS_MAP = [{ type: Date, scalar: DateTimeScalar }]

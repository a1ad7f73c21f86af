import { ApolloServerErrorCode, unwrapResolverError } from '@apollo/server/errors'
import { type ExecutionResult, type FormattedExecutionResult, GraphQLError, type GraphQLFormattedError } from 'graphql'
import { errorCatalogue, type GraphqlErrorCode } from '../../model/error.catalogue.js'
import { isDatabaseUnreachable } from '../../storage/database.errors.js'

/**
 * An error about the caller's arguments, answered as `extensions.code = "BAD_USER_INPUT"`.
 * `argumentName` names the argument, as Apollo's own input errors do.
 */
export function badUserInput(message: string, argumentName?: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: 'BAD_USER_INPUT' satisfies GraphqlErrorCode, ...(argumentName ? { argumentName } : {}) },
  })
}

// PostgreSQL's timestamptz reaches from 4713 BC to 294276 AD, but writes no year 0 and reads no
// ISO year below 1 or above 9999 as JavaScript writes them (`0000-…`, `+010000-…`): these
// four-digit years are the times every store can compare with.
const EARLY_YEAR_ONE = new Date(0).setUTCFullYear(1, 0, 1)
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/** The range every time the API takes must be in, as the message that says so names it. */
export const STORABLE_TIMES = '0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z'

/** Whether epoch milliseconds are a time a stored row can be compared with: the years 1 to 9999. */
export function isStorableTime(at: number): boolean {
  return Number.isFinite(at) && at >= EARLY_YEAR_ONE && at <= LATEST
}

/** A caller's text shown back in a message, cut to a readable length. */
export function echoed(value: string, max = 80): string {
  const characters = [...value]
  return characters.length <= max ? value : `${characters.slice(0, max).join('')}…`
}

const INTERNAL_MESSAGE = 'Internal error.'

/** A GraphQL error with a code of the catalogue (model/error.catalogue.ts). */
export function graphqlError(
  code: GraphqlErrorCode,
  message: string,
  extensions: Record<string, unknown> = {},
): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extensions } })
}

/** The body of an answer refused before GraphQL runs, in the GraphQL response shape. */
export function graphqlErrorBody(
  code: GraphqlErrorCode,
  message: string,
): { errors: Array<{ message: string; extensions: { code: GraphqlErrorCode } }> } {
  return { errors: [{ message, extensions: { code } }] }
}

/**
 * Apollo's `formatError`: errors we raised on purpose (any GraphQLError) pass as they are; an
 * error that escaped from below (a database fault, a bug) keeps its code but not its message,
 * which may name tables, values or connection details. The original is handed to `log`.
 */
export function maskUnexpectedErrors(log: (error: unknown) => void) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    if (formatted.extensions?.code !== ApolloServerErrorCode.INTERNAL_SERVER_ERROR) return formatted
    // A fault thrown outside a resolver (the executor, a plugin) reaches here wrapped in a
    // GraphQLError by Apollo: its cause decides, not the wrapper.
    const unwrapped = unwrapResolverError(error)
    const cause = (unwrapped as { originalError?: unknown } | null)?.originalError
    const original = isGraphqlError(unwrapped) && cause instanceof Error && !isGraphqlError(cause) ? cause : unwrapped
    if (isGraphqlError(original)) return formatted
    log(original)
    // A database that is away is the caller's to retry, not a fault of ours: a code that says so.
    const code: GraphqlErrorCode = isDatabaseUnreachable(original) ? 'DATABASE_UNAVAILABLE' : 'INTERNAL_SERVER_ERROR'
    return {
      message: code === 'DATABASE_UNAVAILABLE' ? errorCatalogue.DATABASE_UNAVAILABLE.message : INTERNAL_MESSAGE,
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { code },
    }
  }
}

// By name as well as by class: graphql ships a CommonJS and an ESM build, and a test runner may
// load both, so an error from graphql-scalars need not be an instance of the class imported here.
function isGraphqlError(error: unknown): boolean {
  return error instanceof GraphQLError || (error instanceof Error && error.name === 'GraphQLError')
}

/**
 * A result computed outside Apollo (a subscription's event) formatted as Apollo formats one: an
 * error without a code is INTERNAL_SERVER_ERROR, `extensions.http` is Apollo's, not the
 * caller's, and then `format` (the pipeline's masking) decides what the caller sees.
 */
export function formatResultErrors(
  result: ExecutionResult,
  format: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError,
): FormattedExecutionResult {
  if (!result.errors) return result as FormattedExecutionResult
  const errors = result.errors.map((error) => {
    const json = error.toJSON()
    const { http: _http, ...extensions } = json.extensions ?? {}
    return format({ ...json, extensions: { ...extensions, code: extensions.code ?? 'INTERNAL_SERVER_ERROR' } }, error)
  })
  return { ...result, errors }
}

import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  getNamedType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  visit,
} from 'graphql'
import { createRequire } from 'node:module'
import type { ComplexityEstimator } from 'graphql-query-complexity'
import { graphqlError } from '../graphql.errors.js'
import type { GraphqlErrorCode } from '../../../model/error.catalogue.js'
import { audienceEstimator } from '../reads/audience.window.js'
import { listEstimator } from './list.items.js'

// Its ESM build imports graphql/index.mjs by name: a second graphql instance beside the
// CommonJS one type-graphql and Apollo use, which graphql refuses to mix. Its CommonJS build
// requires plain 'graphql', the same instance.
const { getComplexity, simpleEstimator } = createRequire(import.meta.url)(
  'graphql-query-complexity',
) as typeof import('graphql-query-complexity')

/** `config.graphql`'s limits on one operation. */
export interface QueryLimits {
  maxDepth: number
  maxAliases: number
  maxCost: number
  defaultPageSize: number
}

/** The error codes of a refused operation (in `extensions.code`). */
export const LIMIT_CODES = {
  depth: 'QUERY_TOO_DEEP',
  aliases: 'TOO_MANY_ALIASES',
  cost: 'QUERY_TOO_COSTLY',
} as const satisfies Record<string, GraphqlErrorCode>

/**
 * Checks one operation against the limits, after validation, before execution: text the database
 * cannot hold (below), its depth, its
 * aliases (a cheap way to ask for the same costly field many times), and its cost, where every
 * field costs 1 and a connection's selection costs once per item it may return (`first`, else
 * the default page size). Returns the refusal, or undefined.
 */
export function checkQueryLimits(options: {
  schema: GraphQLSchema
  document: DocumentNode
  operationName?: string | null | undefined
  variables?: Record<string, unknown> | null | undefined
  limits: QueryLimits
}): GraphQLError | undefined {
  const { document, limits } = options
  const operation = pickOperation(document, options.operationName)
  if (!operation) return undefined
  const nul = nulRefusal(document, options.variables)
  if (nul) return nul
  const fragments = new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((d) => [d.name.value, d]),
  )
  const shape = measure(operation.selectionSet, fragments, new Set())
  // Schema introspection (IDEs, codegen) nests `ofType` deeper than data queries need.
  const introspectionLimit = Math.max(limits.maxDepth, INTROSPECTION_DEPTH)
  if (shape.introspectionDepth > introspectionLimit) {
    return refusal(
      LIMIT_CODES.depth,
      `The introspection is ${shape.introspectionDepth} levels deep; at most ${introspectionLimit} are allowed.`,
      shape.introspectionDepth,
      introspectionLimit,
    )
  }
  if (shape.depth > limits.maxDepth) {
    return refusal(
      LIMIT_CODES.depth,
      `The operation is ${shape.depth} levels deep; at most ${limits.maxDepth} are allowed.`,
      shape.depth,
      limits.maxDepth,
    )
  }
  if (shape.aliases > limits.maxAliases) {
    return refusal(
      LIMIT_CODES.aliases,
      `The operation uses ${shape.aliases} aliases; at most ${limits.maxAliases} are allowed.`,
      shape.aliases,
      limits.maxAliases,
    )
  }
  let cost: number
  try {
    cost = getComplexity({
      schema: options.schema,
      query: document,
      variables: options.variables ?? {},
      ...(options.operationName ? { operationName: options.operationName } : {}),
      estimators: [
        connectionEstimator(limits.defaultPageSize),
        entitiesEstimator,
        audienceEstimator(),
        listEstimator(limits.defaultPageSize),
        simpleEstimator({ defaultComplexity: 1 }),
      ],
    })
  } catch {
    // Variables that do not coerce: execution refuses them next, with the precise error.
    return undefined
  }
  if (cost > limits.maxCost) {
    return refusal(
      LIMIT_CODES.cost,
      `The operation may cost ${cost}; at most ${limits.maxCost} is allowed. Ask for smaller pages (first) or ` +
        `fewer fields.`,
      cost,
      limits.maxCost,
    )
  }
  return undefined
}

// Distinct (operation, variables) pairs remembered per document; a client sending endless
// variations only keeps its latest few.
const PASSES_PER_DOCUMENT = 64

/**
 * {@link checkQueryLimits} for one server's limits, remembering the operations that passed: the
 * walk and the cost estimate are per document and variables, and a dashboard sends the same few
 * again and again. Apollo hands back the same document object for the same query text (its
 * document cache), so what is remembered goes with the document. Refusals are never remembered:
 * they are rare, and each answer gets an error of its own.
 */
export function queryLimitsChecker(
  limits: QueryLimits,
): (options: Omit<Parameters<typeof checkQueryLimits>[0], 'limits'>) => GraphQLError | undefined {
  const passed = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Set<string>>>()
  return (options) => {
    let bySchema = passed.get(options.schema)
    if (!bySchema) passed.set(options.schema, (bySchema = new WeakMap()))
    let keys = bySchema.get(options.document)
    if (!keys) bySchema.set(options.document, (keys = new Set()))
    const key = JSON.stringify([options.operationName ?? null, options.variables ?? {}])
    if (keys.has(key)) return undefined
    const refusal = checkQueryLimits({ ...options, limits })
    if (!refusal) {
      if (keys.size >= PASSES_PER_DOCUMENT) keys.clear()
      keys.add(key)
    }
    return refusal
  }
}

/**
 * PostgreSQL text cannot hold NUL, and a parameter holding one is the statement's error, answered
 * as the server's. Every text an operation gives (its literals, its variables at any depth) ends
 * as a parameter of some statement, so one with a NUL is refused here, once for every argument
 * and input field there is or will be, rather than by each resolver that remembers to.
 */
function nulRefusal(
  document: DocumentNode,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError | undefined {
  for (const [name, value] of Object.entries(variables ?? {}))
    if (holdsNul(value)) return nulError(`Variable $${name} holds a NUL character, which no text may contain.`, name)
  let found = false
  visit(document, {
    StringValue(node) {
      if (node.value.includes('\u0000')) found = true
    },
  })
  return found ? nulError('A string in the operation holds a NUL character, which no text may contain.') : undefined
}

// Refused before execution, so Apollo answers the status it is given (else 500), as for the limits.
function nulError(message: string, argumentName?: string): GraphQLError {
  return graphqlError('BAD_USER_INPUT', message, { ...(argumentName ? { argumentName } : {}), http: { status: 400 } })
}

function holdsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  // Deeper than any input type of the schema: coercion refuses it next.
  if (depth > 32 || value === null || typeof value !== 'object') return false
  return Object.entries(value).some(([key, inner]) => key.includes('\u0000') || holdsNul(inner, depth + 1))
}

function connectionEstimator(defaultPageSize: number): ComplexityEstimator {
  return ({ field, args, childComplexity }) => {
    if (!getNamedType(field.type).name.endsWith('Connection')) return undefined
    const first = typeof args.first === 'number' && args.first >= 0 ? args.first : defaultPageSize
    return 1 + childComplexity * Math.max(1, first)
  }
}

// A federation router's `_entities` resolves each representation it sends: its selection counts once per
// representation.
const entitiesEstimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  if (field.name !== '_entities' || !Array.isArray(args.representations)) return undefined
  return 1 + childComplexity * Math.max(1, args.representations.length)
}

// The standard introspection query is 13 levels deep; this leaves room for IDEs' variants.
const INTROSPECTION_DEPTH = 20

interface Shape {
  depth: number
  introspectionDepth: number
  aliases: number
}

function measure(
  selectionSet: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  visiting: Set<string>,
): Shape {
  let depth = 0
  let introspectionDepth = 0
  let aliases = 0
  for (const selection of selectionSet.selections) {
    let inner: Shape = { depth: 0, introspectionDepth: 0, aliases: 0 }
    if (selection.kind === Kind.FIELD) {
      if (selection.alias) aliases++
      if (selection.selectionSet) inner = measure(selection.selectionSet, fragments, visiting)
      if (selection.name.value === '__schema' || selection.name.value === '__type') {
        introspectionDepth = Math.max(introspectionDepth, 1 + inner.depth, 1 + inner.introspectionDepth)
        aliases += inner.aliases
        continue
      }
      depth = Math.max(depth, 1 + inner.depth)
      introspectionDepth = Math.max(
        introspectionDepth,
        inner.introspectionDepth === 0 ? 0 : 1 + inner.introspectionDepth,
      )
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      inner = measure(selection.selectionSet, fragments, visiting)
      depth = Math.max(depth, inner.depth)
      introspectionDepth = Math.max(introspectionDepth, inner.introspectionDepth)
    } else {
      const fragment = fragments.get(selection.name.value)
      // A cycle is a validation error already; never loop on one.
      if (!fragment || visiting.has(fragment.name.value)) continue
      visiting.add(fragment.name.value)
      inner = measure(fragment.selectionSet, fragments, visiting)
      visiting.delete(fragment.name.value)
      depth = Math.max(depth, inner.depth)
      introspectionDepth = Math.max(introspectionDepth, inner.introspectionDepth)
    }
    aliases += inner.aliases
  }
  return { depth, introspectionDepth, aliases }
}

function pickOperation(
  document: DocumentNode,
  operationName: string | null | undefined,
): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  )
  return operationName != null ? operations.find((operation) => operation.name?.value === operationName) : operations[0]
}

function refusal(code: GraphqlErrorCode, message: string, actual: number, limit: number): GraphQLError {
  return graphqlError(code, message, { actual, limit, http: { status: 400 } })
}

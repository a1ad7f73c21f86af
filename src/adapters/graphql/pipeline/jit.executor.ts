import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server'
import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  getOperationAST,
  type GraphQLSchema,
  getVariableValues,
  GraphQLError,
  type OperationDefinitionNode,
  printSchema,
  visit,
  BREAK,
} from 'graphql'
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit'
import { beginJsonTexts, endJsonTexts } from '../reads/json.parts.js'
import type { JsonTextExecution } from './json.rewrite.js'

/** Apollo's `gateway` option: how a schema and an executor are handed to it. */
type GatewayInterface = ApolloServerOptionsWithGateway<BaseContext>['gateway']

/** How {@link compiledExecution} decides what to compile. */
export interface CompiledExecutionOptions {
  /**
   * Runs of the same operation with graphql-js before it is compiled; compiling costs milliseconds, so one-off
   * operations never pay it.
   */
  compileAfter?: number
  /**
   * A task page's pure-data parts as JSON text (json.rewrite.ts), for the requests `applies`
   * says: those whose answer is serialized by `stringifyWithJsonTexts`.
   */
  jsonText?: { execution: JsonTextExecution; applies(context: unknown): boolean } | undefined
  /** Runs each operation inside `run` (its span, operation.spans.ts); as is when absent. */
  around?: ((request: ExecutorRequest, run: () => Promise<ExecutionResult>) => Promise<ExecutionResult>) | undefined
}

/** What Apollo hands the executor of one operation (the parts read here). */
export interface ExecutorRequest {
  document: DocumentNode
  source?: string | undefined
  operation?: OperationDefinitionNode | undefined
  operationName?: string | null | undefined
  request: { operationName?: string; variables?: Record<string, unknown> }
  context: unknown
}

/** Runs one operation: Apollo's gateway executor, also called directly by the request core. */
export type OperationExecutor = (request: ExecutorRequest) => Promise<ExecutionResult>

/** Apollo's gateway, with its executor for the request core. */
type CompiledGateway = NonNullable<GatewayInterface> & { execute: OperationExecutor }

/** What each parsed document remembers, per operation name. */
interface Entry {
  runs: number
  compiled: CompiledQuery | null
  /** Its variable definitions, which graphql-js coerces before a compiled run. */
  variables: OperationDefinitionNode['variableDefinitions']
  /** The document rewritten for JSON text, and its compiled query; null when nothing of it can be text. */
  text: { document: DocumentNode; compiled: CompiledQuery | null } | null
}

/** No compiled query: introspection, an operation graphql-jit refused, or a subscription. */
const NEVER: Entry = { runs: -1, compiled: null, variables: undefined, text: null }

/**
 * Apollo Server 5 has no `executor` option; its `gateway` option is the supported way to run
 * operations with an executor of one's own, with parsing, validation, the document cache, the
 * plugins and error formatting still Apollo's. This one runs every operation with graphql-js
 * until it has run `compileAfter` times, then with graphql-jit, which compiles the operation into
 * one function and skips graphql-js's per-field bookkeeping.
 *
 * Apollo hands back the same document object for the same query text (its document cache), so
 * compiled queries are kept on the document and go when Apollo evicts it.
 */
export function compiledExecution(schema: GraphQLSchema, options: CompiledExecutionOptions = {}): CompiledGateway {
  const compileAfter = options.compileAfter ?? 1
  const jsonText = options.jsonText
  const byDocument = new WeakMap<DocumentNode, Map<string | null, Entry>>()

  const entryFor = (document: DocumentNode, operationName: string | undefined): Entry => {
    let entries = byDocument.get(document)
    if (!entries) byDocument.set(document, (entries = new Map()))
    // No name and the empty name are two requests: graphql-js finds no operation named "".
    const key = operationName ?? null
    let entry = entries.get(key)
    if (!entry) {
      const operation = getOperationAST(document, operationName)
      entry =
        operation && operation.operation !== 'subscription' && !introspects(document)
          ? { runs: 0, compiled: null, variables: operation.variableDefinitions, text: null }
          : NEVER
      if (entry !== NEVER && jsonText) {
        const rewritten = jsonText.execution.rewrite(document, operationName)
        if (rewritten) entry.text = { document: rewritten, compiled: null }
      }
      entries.set(key, entry)
    }
    if (entry !== NEVER && !entry.compiled && ++entry.runs > compileAfter) {
      const compiled = compileQuery(schema, document, operationName)
      if (isCompiledQuery(compiled)) entry.compiled = compiled
      else entries.set(key, NEVER)
      if (entry.text && jsonText) {
        const text = compileQuery(jsonText.execution.schema, entry.text.document, operationName)
        // A rewrite graphql-jit refuses is answered the object way.
        if (isCompiledQuery(text)) entry.text.compiled = text
        else entry.text = null
      }
    }
    return entry
  }

  // The rewritten document on the extended schema; the object path when a text cannot be used.
  const runText = async (
    entry: Entry,
    request: {
      document: DocumentNode
      variables: Record<string, unknown> | undefined
      operationName: string | undefined
      context: unknown
    },
  ): Promise<ExecutionResult | null> => {
    const text = entry.text
    if (!text || !jsonText?.applies(request.context)) return null
    const { context, variables, operationName } = request
    beginJsonTexts(context as object)
    const result = text.compiled
      ? withGraphqlErrors(await text.compiled.query(undefined, context, variables ?? {}))
      : await execute({
          schema: jsonText.execution.schema,
          document: text.document,
          contextValue: context,
          variableValues: variables,
          operationName,
        })
    return endJsonTexts(context as object, result.data) === 'done' ? result : null
  }

  const run = async (request: ExecutorRequest): Promise<ExecutionResult> => {
    const { document, context } = request
    const { operationName, variables } = request.request
    const entry = entryFor(document, operationName)
    const compiled = entry.compiled
    if (!compiled) {
      const text = await runText(entry, { document, variables, operationName, context })
      return text ?? execute({ schema, document, contextValue: context, variableValues: variables, operationName })
    }
    // graphql-js coerces the variables first, so a bad variable is refused with its exact words
    // (and Apollo's BAD_USER_INPUT): graphql-jit words some of those errors differently.
    if (entry.variables && entry.variables.length > 0) {
      const coerced = getVariableValues(schema, entry.variables, variables ?? {}, { maxErrors: 50 })
      if (coerced.errors) return { errors: coerced.errors }
    }
    const text = await runText(entry, { document, variables, operationName, context })
    return text ?? withGraphqlErrors(await compiled.query(undefined, context, variables ?? {}))
  }
  const around = options.around
  const executor = around ? (request: ExecutorRequest) => around(request, () => run(request)) : run

  return {
    // The same executor for the request core (request.pipeline.ts), which runs without Apollo.
    execute: executor,
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: printSchema(schema) })
      return () => {}
    },
    async load() {
      return { executor }
    },
    async stop() {},
  }
}

/** One subscription event's execution: the operation's selection run with the event as its root. */
export type EventExecution = (
  event: unknown,
  context: unknown,
  variables: Record<string, unknown>,
) => ExecutionResult | Promise<ExecutionResult>

/**
 * The execution of a subscription's events, compiled by graphql-jit when the subscription starts
 * (an event is executed once per distinct operation, often for thousands of subscribers, so it
 * pays to compile at once), with graphql-js only where graphql-jit refuses the operation. Kept per
 * document as Apollo's document cache hands it, like {@link compiledExecution}'s queries.
 */
export function compiledEvents(
  schema: GraphQLSchema,
): (document: DocumentNode, operationName: string | null) => EventExecution {
  const byDocument = new WeakMap<DocumentNode, Map<string | null, EventExecution>>()
  return (document, operationName) => {
    let executions = byDocument.get(document)
    if (!executions) byDocument.set(document, (executions = new Map()))
    let execution = executions.get(operationName)
    if (!execution) {
      const compiled = compileQuery(schema, document, operationName ?? undefined)
      execution = isCompiledQuery(compiled)
        ? (event, context, variables) => {
            const result = compiled.query(event, context, variables)
            return result instanceof Promise ? result.then(withGraphqlErrors) : withGraphqlErrors(result)
          }
        : (event, context, variables) =>
            execute({
              schema,
              document,
              rootValue: event,
              contextValue: context,
              variableValues: variables,
              operationName,
            })
      executions.set(operationName, execution)
    }
    return execution
  }
}

/**
 * graphql-jit's errors are its own kind: no `extensions` at all (Apollo's error formatting reads
 * `extensions.code` and fails, answering "Internal server error" without ever masking or logging
 * the cause) and the cause hidden. Each becomes graphql-js's error with the same message, path,
 * locations and cause, so a compiled run's errors are formatted, masked and logged as any other.
 */
function withGraphqlErrors(result: ExecutionResult): ExecutionResult {
  if (!result.errors) return result
  const errors = result.errors.map((error) => {
    if (error.extensions) return error
    const cause = (error as { originalError?: Error | null }).originalError ?? undefined
    const normalized = new GraphQLError(error.message, {
      path: error.path,
      ...(cause ? { originalError: cause } : {}),
      extensions: (cause as GraphQLError | undefined)?.extensions ?? {},
    })
    // The constructor finds locations only from AST nodes, which a compiled query no longer has.
    ;(normalized as { locations: GraphQLError['locations'] }).locations = error.locations
    return normalized
  })
  return { ...result, errors }
}

/** Whether a document reads the schema (`__schema`, `__type`): rare, and left to graphql-js. */
function introspects(document: DocumentNode): boolean {
  let found = false
  visit(document, {
    Field(node) {
      if (node.name.value === '__schema' || node.name.value === '__type') {
        found = true
        return BREAK
      }
      return undefined
    },
  })
  return found
}

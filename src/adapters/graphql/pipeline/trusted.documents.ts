import { readFileSync } from 'node:fs'
import type { ApolloServerPlugin, BaseContext, GraphQLRequestListener } from '@apollo/server'
import { type DocumentNode, GraphQLError, type GraphQLSchema, parse, validate } from 'graphql'
import { z } from 'zod'
import { StartupError } from '../../../config/startup.error.js'
import { type GraphqlErrorCode, errorCatalogue } from '../../../model/error.catalogue.js'
import type { Scope } from '../auth.scope.js'

/**
 * Trusted documents ("safelisting"): a key with `operations: "trusted"` runs only the documents
 * of the manifests named by `graphql.trustedDocuments`, each named by its hash the way Apollo
 * Client's persisted-query link and urql's persisted exchange send it
 * (`extensions.persistedQuery.sha256Hash`). The document that runs is always the manifest's:
 * text a trusted key sends beside a known hash is never run, and nothing a trusted key sends is
 * ever registered (Apollo's automatic persisted queries stay as they are for every other key).
 */

/** One trusted document: its text (what Apollo parses and caches) and its parsed form (what graphql-ws runs). */
export interface TrustedDocument {
  text: string
  document: DocumentNode
}

/** The trusted documents by hash. */
export type TrustedDocuments = ReadonlyMap<string, TrustedDocument>

const SHA256_PREFIX = 'sha256:'

// The format graphql-codegen's client preset writes (`persistedDocuments`): hash → document.
const manifestSchema = z.record(z.string().min(1), z.string().min(1))

/**
 * Reads the manifests, refusing to start (one line naming the file and hash) on one that cannot
 * be read, or on a document that does not parse or validate against `schema`: a trusted document
 * that cannot run would only be found out by the frontend that ships it.
 */
export function loadTrustedDocuments(paths: readonly string[], schema: GraphQLSchema): TrustedDocuments {
  const documents = new Map<string, TrustedDocument>()
  for (const path of paths) {
    const where = `trusted documents file ${path}`
    let manifest: Record<string, string>
    try {
      manifest = manifestSchema.parse(JSON.parse(readFileSync(path, 'utf8')))
    } catch (error) {
      const reason =
        error instanceof z.ZodError
          ? "expected a JSON object of hash → document text (graphql-codegen's persisted documents)"
          : error instanceof Error
            ? error.message
            : String(error)
      throw new StartupError(`${where}: ${reason}`)
    }
    for (const [hash, text] of Object.entries(manifest)) {
      let document: DocumentNode
      try {
        document = parse(text)
      } catch (error) {
        throw new StartupError(`${where}: ${hash}: ${(error as Error).message}`)
      }
      const invalid = validate(schema, document)[0]
      if (invalid) throw new StartupError(`${where}: ${hash}: ${invalid.message}`)
      documents.set(hash, { text, document })
      // The client preset writes `sha256:<hex>`; a client hashing the text itself sends the bare hex.
      if (hash.startsWith(SHA256_PREFIX)) documents.set(hash.slice(SHA256_PREFIX.length), { text, document })
    }
  }
  return documents
}

/** What a request carries: its text (if any) and its extensions. */
interface Sent {
  query?: string | undefined
  extensions?: Record<string, unknown> | null | undefined
}

/**
 * The trusted document a trusted-only caller's request names, or the refusal; undefined for any
 * other caller, whose request goes on as it came.
 */
export function trustedDocumentFor(
  scope: Scope,
  sent: Sent,
  documents: TrustedDocuments,
): TrustedDocument | GraphQLError | undefined {
  if (!scope.trustedOnly) return undefined
  const persisted = sent.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined
  const hash = persisted?.sha256Hash
  if (typeof hash !== 'string' || hash === '') return refusal('PERSISTED_QUERY_ID_REQUIRED')
  return documents.get(hash) ?? refusal('PERSISTED_QUERY_NOT_IN_LIST')
}

function refusal(code: GraphqlErrorCode): GraphQLError {
  const entry = errorCatalogue[code]
  return new GraphQLError(entry.message, { extensions: { code, http: { status: entry.status } } })
}

// What a refused request parses instead of what it sent, so that nothing it sent is parsed,
// validated, registered or run before its refusal is answered.
const REFUSED = '{ __typename }'

/**
 * The Apollo side: before Apollo reads the request, a trusted-only caller's request gets the
 * trusted document's text and loses its `persistedQuery` extension (so Apollo neither looks the
 * hash up in its APQ cache nor registers anything), or is marked refused and answered with the
 * refusal once the operation is resolved (the first hook whose error Apollo answers as such).
 */
export function trustedDocumentsPlugin<C extends BaseContext & { scope: Scope }>(
  documents: TrustedDocuments,
): ApolloServerPlugin<C> {
  return {
    async requestDidStart({ request, contextValue }): Promise<GraphQLRequestListener<C> | void> {
      const found = trustedDocumentFor(contextValue.scope, request, documents)
      if (!found) return
      if (request.extensions) delete request.extensions.persistedQuery
      if (!(found instanceof GraphQLError)) {
        request.query = found.text
        return
      }
      request.query = REFUSED
      delete request.operationName
      return {
        async didResolveOperation() {
          throw found
        },
      }
    },
  }
}

/**
 * The one catalogue of codes livegate answers with: every HTTP `code` of the callback route and
 * of any other path, every GraphQL `extensions.code`, and every websocket close code. Codes,
 * `ret` values and close numbers are a public contract: operators grep logs for them, clients
 * branch on them, and the service's console shows the `ret`, so an entry may be added but never
 * renumbered. README.md's tables of codes are checked against this one (test/unit/error.catalogue.test.ts).
 *
 * One entry a code: where it is used (`on`), its HTTP status (`status`) or websocket close number
 * (`close`), its callback `ret` (HTTP codes only), and its meaning (`message`: for HTTP codes the
 * message answered when no better one is given).
 */
export const errorCatalogue = {
  // The callback route and every other non-GraphQL path: {"ret", "code", "message"}.
  MALFORMED_REQUEST: {
    on: 'http',
    status: 400,
    ret: 40001,
    message: 'The request could not be read as a notification.',
  },
  MISSING_FIELDS: { on: 'http', status: 400, ret: 40002, message: 'Required fields are missing.' },
  INVALID_FIELDS: { on: 'http', status: 400, ret: 40003, message: 'Fields have values of the wrong form.' },
  SIGNATURE_MISSING: { on: 'http', status: 401, ret: 40101, message: 'The signature header is missing.' },
  SIGNATURE_INVALID: { on: 'http', status: 401, ret: 40102, message: 'The signature does not match.' },
  TIMESTAMP_MISSING: { on: 'http', status: 401, ret: 40103, message: 'The timestamp header is missing.' },
  TIMESTAMP_INVALID: {
    on: 'http',
    status: 401,
    ret: 40104,
    message: 'The timestamp header is not a millisecond Unix time.',
  },
  TIMESTAMP_STALE: { on: 'http', status: 401, ret: 40105, message: 'The timestamp is outside the accepted window.' },
  UNKNOWN_SERVICE: { on: 'http', status: 403, ret: 40301, message: 'The service code is not configured.' },
  NOT_FOUND: { on: 'http', status: 404, ret: 40401, message: 'No such address.' },
  METHOD_NOT_ALLOWED: { on: 'http', status: 405, ret: 40501, message: 'Use POST (form) or GET (query).' },
  PAYLOAD_TOO_LARGE: { on: 'http', status: 413, ret: 41301, message: 'The request body is over the limit.' },
  UNSUPPORTED_MEDIA_TYPE: {
    on: 'http',
    status: 415,
    ret: 41501,
    message: 'Send the notification as application/x-www-form-urlencoded, or as a GET query.',
  },
  INTERNAL: { on: 'http', status: 500, ret: 50001, message: 'Internal error.' },
  STORAGE_UNAVAILABLE: {
    on: 'http',
    status: 503,
    ret: 50301,
    message: 'The database cannot take the notification now; retry.',
  },

  // `/graphql`: `errors[].extensions.code`; `status` is the HTTP status when the error decides it.
  BAD_REQUEST: {
    on: 'graphql',
    status: 400,
    message:
      'A request /graphql does not serve: a possible CSRF (a form or text/plain POST, a GET without a GraphQL ' +
      'accept or preflight header), a subscription over HTTP, an unreadable body, or another method (405).',
  },
  UNAUTHENTICATED: {
    on: 'graphql',
    status: 401,
    message: 'No valid API key or token (`Authorization: Bearer <key or token>`); `extensions.reason` says why.',
  },
  BAD_USER_INPUT: {
    on: 'graphql',
    status: 400,
    message: 'An argument or variable livegate cannot use: a bad `first`, `after`, id or filter.',
  },
  GRAPHQL_PARSE_FAILED: { on: 'graphql', status: 400, message: 'The document does not parse.' },
  GRAPHQL_VALIDATION_FAILED: {
    on: 'graphql',
    status: 400,
    message: 'The document does not validate against the schema.',
  },
  OPERATION_RESOLUTION_FAILURE: {
    on: 'graphql',
    status: 400,
    message: 'The operation to run cannot be told (a missing or unknown `operationName`).',
  },
  PERSISTED_QUERY_NOT_FOUND: {
    on: 'graphql',
    status: 200,
    message: "An automatic persisted query's hash that is not (or no longer) known: send the query with it.",
  },
  QUERY_TOO_DEEP: { on: 'graphql', status: 400, message: 'The operation is deeper than `graphql.maxDepth`.' },
  TOO_MANY_ALIASES: {
    on: 'graphql',
    status: 400,
    message: 'The operation uses more aliases than `graphql.maxAliases`.',
  },
  QUERY_TOO_COSTLY: { on: 'graphql', status: 400, message: 'The operation may cost more than `graphql.maxCost`.' },
  PERSISTED_QUERY_ID_REQUIRED: {
    on: 'graphql',
    status: 400,
    message:
      'This API key runs only trusted documents: send the hash of one (extensions.persistedQuery.sha256Hash), ' +
      'not a query.',
  },
  PERSISTED_QUERY_NOT_IN_LIST: {
    on: 'graphql',
    status: 400,
    message:
      'No trusted document has this hash: this API key runs only the documents of the trusted-documents manifests.',
  },
  FORBIDDEN: {
    on: 'graphql',
    status: 403,
    message:
      'The API key may read but not do this: acting (a mutation, a webhook replay) needs `"can": ["operate"]` on ' +
      'the key.',
  },
  RATE_LIMITED: {
    on: 'graphql',
    status: 429,
    message: 'The API key asked for more actions than `limits.actionsPerMinute` allows; retry later.',
  },
  DATABASE_UNAVAILABLE: {
    on: 'graphql',
    status: 200,
    message: 'The database cannot be reached now; retry.',
  },
  INTERNAL_SERVER_ERROR: {
    on: 'graphql',
    status: 500,
    message: 'Internal error (its cause is in the log, never in the answer).',
  },

  // graphql-ws: the code a socket is closed with.
  GOING_AWAY: { on: 'websocket', close: 1001, message: 'The gateway is shutting down.' },
  SUBSCRIBER_TOO_SLOW: { on: 'websocket', close: 4009, message: 'Subscriber too slow: events were not read' },
  UNAUTHORIZED: {
    on: 'websocket',
    close: 4401,
    message: 'Unauthorized: send { "authorization": "Bearer <key or token>" } in connection_init',
  },
} as const satisfies Record<string, CatalogueEntry>

/** One code of the catalogue. */
export type CatalogueEntry =
  | { on: 'http'; status: number; ret: number; message: string }
  | { on: 'graphql'; status: number; message: string }
  | { on: 'websocket'; close: number; message: string }

/** Every code of the catalogue. */
export type CatalogueCode = keyof typeof errorCatalogue

type CodesOn<On extends CatalogueEntry['on']> = {
  [K in CatalogueCode]: (typeof errorCatalogue)[K]['on'] extends On ? K : never
}[CatalogueCode]

/** A code of a GraphQL error's `extensions.code`. */
export type GraphqlErrorCode = CodesOn<'graphql'>

/** A websocket close code, by name. */
export type CloseCode = CodesOn<'websocket'>

/** The number and reason a socket is closed with. */
export function closeFor(code: CloseCode): { code: number; reason: string } {
  const entry = errorCatalogue[code]
  return { code: entry.close, reason: entry.message }
}

/** A stable HTTP error code from {@link errorCatalogue}: what a non-GraphQL answer carries. */
export type ErrorCode = CodesOn<'http'>

/** An error as data: what an edge translates into an HTTP answer or a GraphQL error. */
export interface LivegateError {
  code: ErrorCode
  /** A sentence for the caller; never holds a secret or a stack. */
  message: string
  /** Field names the error is about, when it is about fields. */
  fields?: string[]
}

/** Builds a {@link LivegateError}, with the catalogue's message unless one is given. */
export function livegateError(code: ErrorCode, message?: string, fields?: string[]): LivegateError {
  const error: LivegateError = { code, message: message ?? errorCatalogue[code].message }
  if (fields && fields.length > 0) error.fields = fields
  return error
}

/** The JSON body and HTTP status an error is answered with on the HTTP edge. */
export function errorAnswer(error: LivegateError): {
  status: number
  body: { ret: number; code: ErrorCode; message: string; fields?: string[] }
} {
  const entry = errorCatalogue[error.code]
  const body: { ret: number; code: ErrorCode; message: string; fields?: string[] } = {
    ret: entry.ret,
    code: error.code,
    message: error.message,
  }
  if (error.fields) body.fields = error.fields
  return { status: entry.status, body }
}

/**
 * The catalogue code for an error the HTTP framework raised before our code ran (a body over
 * the limit, a broken request); anything it raised with a 5xx, or without a status, is internal.
 */
export function codeForFrameworkError(error: unknown): ErrorCode {
  const status = (error as { statusCode?: unknown } | null)?.statusCode
  if (status === 413) return 'PAYLOAD_TOO_LARGE'
  if (status === 415) return 'UNSUPPORTED_MEDIA_TYPE'
  if (status === 404) return 'NOT_FOUND'
  if (status === 405) return 'METHOD_NOT_ALLOWED'
  if (typeof status === 'number' && status >= 400 && status < 500) return 'MALFORMED_REQUEST'
  return 'INTERNAL'
}

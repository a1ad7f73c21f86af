/**
 * The one catalogue of errors livegate answers with. Codes and `ret` values are a public
 * contract: operators grep logs for them and the service's console shows the `ret`, so an entry
 * may be added but never renumbered.
 */
export const errorCatalogue = {
  MALFORMED_REQUEST: { status: 400, ret: 40001, message: 'The request could not be read as a notification.' },
  MISSING_FIELDS: { status: 400, ret: 40002, message: 'Required fields are missing.' },
  INVALID_FIELDS: { status: 400, ret: 40003, message: 'Fields have values of the wrong form.' },
  PERSISTED_QUERY_ID_REQUIRED: {
    status: 400,
    ret: 40011,
    message: 'This API key runs only trusted documents: send the hash of one (extensions.persistedQuery.sha256Hash), not a query.',
  },
  PERSISTED_QUERY_NOT_IN_LIST: {
    status: 400,
    ret: 40012,
    message: 'No trusted document has this hash: this API key runs only the documents of the trusted-documents manifests.',
  },
  SIGNATURE_MISSING: { status: 401, ret: 40101, message: 'The signature header is missing.' },
  SIGNATURE_INVALID: { status: 401, ret: 40102, message: 'The signature does not match.' },
  TIMESTAMP_MISSING: { status: 401, ret: 40103, message: 'The timestamp header is missing.' },
  TIMESTAMP_INVALID: { status: 401, ret: 40104, message: 'The timestamp header is not a millisecond Unix time.' },
  TIMESTAMP_STALE: { status: 401, ret: 40105, message: 'The timestamp is outside the accepted window.' },
  UNKNOWN_SERVICE: { status: 403, ret: 40301, message: 'The service code is not configured.' },
  NOT_FOUND: { status: 404, ret: 40401, message: 'No such address.' },
  METHOD_NOT_ALLOWED: { status: 405, ret: 40501, message: 'Use POST (form) or GET (query).' },
  PAYLOAD_TOO_LARGE: { status: 413, ret: 41301, message: 'The request body is over the limit.' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    ret: 41501,
    message: 'Send the notification as application/x-www-form-urlencoded, or as a GET query.',
  },
  INTERNAL: { status: 500, ret: 50001, message: 'Internal error.' },
  STORAGE_UNAVAILABLE: { status: 503, ret: 50301, message: 'The database cannot take the notification now; retry.' },
} as const satisfies Record<string, { status: number; ret: number; message: string }>

/** A stable error code from {@link errorCatalogue}. */
export type ErrorCode = keyof typeof errorCatalogue

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

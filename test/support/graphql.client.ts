import type { Gateway } from '../../src/gateway.assembly.js'

/** A GraphQL error as answered. */
export interface GraphqlError {
  message: string
  path?: Array<string | number>
  locations?: Array<{ line: number; column: number }>
  extensions?: { code?: string; [key: string]: unknown }
}

/** A GraphQL answer, read whole: the HTTP status and the parsed body (with its text, for messages). */
export interface GraphqlAnswer<D> {
  status: number
  contentType: string | null
  data: D | null | undefined
  errors: GraphqlError[] | undefined
  extensions: Record<string, unknown> | undefined
  text: string
}

/** How {@link graphql} sends the operation. */
export interface GraphqlRequestOptions {
  /** POST (JSON body, the default) or GET (query string). */
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
}

/**
 * Sends one operation to the gateway's `/graphql` over a real socket. A GET carries Apollo's
 * `apollo-require-preflight` header, as a browser client must for CSRF prevention to let it through.
 */
// `any` by default: tests read answers of many shapes and assert on them.
export async function graphql<D = any>(
  gateway: Pick<Gateway, 'url'>,
  query: string,
  variables: Record<string, unknown> = {},
  options: GraphqlRequestOptions = {},
): Promise<GraphqlAnswer<D>> {
  const method = options.method ?? 'POST'
  const url = new URL('/graphql', gateway.url)
  const init: RequestInit = {
    method,
    headers: { accept: 'application/graphql-response+json, application/json', ...options.headers },
  }
  if (method === 'GET') {
    url.searchParams.set('query', query)
    url.searchParams.set('variables', JSON.stringify(variables))
    init.headers = { 'apollo-require-preflight': 'true', ...init.headers }
  } else {
    init.headers = { 'content-type': 'application/json', ...init.headers }
    init.body = JSON.stringify({ query, variables })
  }
  const response = await fetch(url, init)
  const text = await response.text()
  let body: { data?: D | null; errors?: GraphqlError[]; extensions?: Record<string, unknown> } = {}
  try {
    body = JSON.parse(text) as typeof body
  } catch {
    // left empty: assertions on `text` and `status` say what came back
  }
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    data: body.data,
    errors: body.errors,
    extensions: body.extensions,
    text,
  }
}

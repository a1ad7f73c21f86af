import { createClient, type FormattedExecutionResult } from 'graphql-ws'
import type { GraphQLFormattedError } from 'graphql'
import WebSocket from 'ws'

/**
 * Runs one query or mutation over a real graphql-ws socket and resolves with its one result, or
 * with the error graphql-ws reported (a refused operation arrives as an array of errors).
 */
export async function overSocket(
  baseUrl: string,
  query: string,
  variables: Record<string, unknown>,
  key: string,
): Promise<FormattedExecutionResult<Record<string, unknown>, unknown>> {
  const client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { authorization: `Bearer ${key}` },
  })
  try {
    return await new Promise((resolve, reject) => {
      let result: FormattedExecutionResult<Record<string, unknown>, unknown> | undefined
      client.subscribe<Record<string, unknown>>(
        { query, variables },
        {
          next: (value) => {
            result = value
          },
          error: (error) => {
            if (Array.isArray(error)) resolve({ errors: error as GraphQLFormattedError[] })
            else reject(error instanceof Error ? error : new Error(JSON.stringify(error)))
          },
          complete: () => resolve(result ?? {}),
        },
      )
    })
  } finally {
    await client.dispose()
  }
}

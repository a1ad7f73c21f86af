// The UMD builds the playground loads before its script, as much of them as it uses. graphqlWs is
// declared beside the dashboard's globals (dashboard.globals.d.ts).

interface PlaygroundFetcherParams {
  query?: string
  variables?: unknown
  operationName?: string | null
}

interface PlaygroundFetcherOptions {
  headers?: Record<string, string>
}

type PlaygroundFetcher = (params: PlaygroundFetcherParams, options?: PlaygroundFetcherOptions) => unknown

declare const GraphiQL: {
  createFetcher(options: {
    url: string
    wsClient: import('graphql-ws').Client
    enableIncrementalDelivery: boolean
  }): PlaygroundFetcher
}

declare const React: {
  createElement(type: unknown, props: Record<string, unknown>): unknown
}

declare const ReactDOM: {
  createRoot(container: Element): { render(element: unknown): void }
}

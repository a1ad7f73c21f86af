// The playground page's own script, compiled from TypeScript into an ES module the page loads
// (src/adapters/http/pages.tsconfig.json). GraphiQL, React and graphql-ws are the UMD builds the
// page loads before it, all served by livegate itself (playground.globals.d.ts).

interface PlaygroundConfig {
  tabs: Array<{ query: string; variables?: string }>
}

const config = JSON.parse(
  document.getElementById('playground-config')?.textContent ?? '{"tabs":[]}',
) as PlaygroundConfig
// The page is served at the endpoint itself, so a reverse proxy's path prefix is kept.
const endpoint = new URL(window.location.pathname, window.location.href)
const socket = new URL(endpoint)
socket.protocol = endpoint.protocol === 'https:' ? 'wss:' : 'ws:'

// The headers editor's values (an API key's `Authorization`, say) go with every HTTP request;
// a browser cannot set headers on a WebSocket, so the socket sends them in connection_init.
let headers: Record<string, string> = {}
// One lazy connection for every subscription the page runs, opened on the first and closed
// after the last (so the next one carries the headers as edited since); a dropped connection
// is retried a few times rather than forever.
const wsClient = graphqlWs.createClient({
  url: socket.href,
  lazy: true,
  retryAttempts: 3,
  connectionParams: () => headers,
})
const send = GraphiQL.createFetcher({
  url: endpoint.href,
  wsClient,
  // Apollo answers plain JSON; the multipart reader would only add a content negotiation.
  enableIncrementalDelivery: false,
})
// GraphiQL keeps the previous tab's operation name (or none) for a moment after a tab switch; a
// run in that moment named an operation the document does not have, or went over HTTP although
// it is a subscription. A document of one operation is always run as that operation.
const operationsIn = (query: string) =>
  [...query.replace(/#[^\n]*/g, '').matchAll(/\b(query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)/g)].map(
    (match) => ({ kind: match[1], name: match[2] }),
  )
const fetcher: PlaygroundFetcher = (params, options) => {
  headers = options?.headers ?? {}
  const operations = operationsIn(params.query ?? '')
  const only = operations.length === 1 ? operations[0] : undefined
  if (!only) return send(params, options)
  // GraphiQL picks the transport from the document it parsed last, which may be the previous tab's.
  if (only.kind === 'subscription') {
    return wsClient.iterate({
      query: params.query ?? '',
      variables: params.variables as Record<string, unknown> | undefined,
      operationName: only.name,
    })
  }
  return send({ ...params, ...(only.name ? { operationName: only.name } : {}) }, options)
}

// A link may open an operation of its own (the dashboard's task rows do): `#query=…&variables=…`.
// In the fragment, so it never reaches a server or its logs; an API key never goes there.
const linked = new URLSearchParams(window.location.hash.slice(1))
const linkedQuery = linked.get('query')
const opened = linkedQuery ? { query: linkedQuery, variables: linked.get('variables') || undefined } : undefined

const root = document.getElementById('graphiql')
if (root) {
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher,
      // GraphiQL adds (or selects) the opened tab among tabs it stored; without stored tabs it
      // shows the defaults, so the opened one leads them.
      defaultTabs: opened ? [opened, ...config.tabs] : config.tabs,
      ...(opened ? { query: opened.query, variables: opened.variables } : {}),
      defaultEditorToolsVisibility: false,
      shouldPersistHeaders: false,
    }),
  )
}

// A module: its names are its own, not the page's globals.
export {}

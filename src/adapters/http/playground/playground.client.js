// The playground page's own script, run by the browser as is (no build step). GraphiQL, React and
// graphql-ws are the UMD builds the page loads before this file, all served by livegate itself.
/* global GraphiQL, React, ReactDOM, graphqlWs */
;(() => {
  const config = JSON.parse(document.getElementById('playground-config').textContent)
  // The page is served at the endpoint itself, so a reverse proxy's path prefix is kept.
  const endpoint = new URL(window.location.pathname, window.location.href)
  const socket = new URL(endpoint)
  socket.protocol = endpoint.protocol === 'https:' ? 'wss:' : 'ws:'

  // The headers editor's values (an API key's `Authorization`, say) go with every HTTP request;
  // a browser cannot set headers on a WebSocket, so the socket sends them in connection_init.
  let headers = {}
  // One lazy connection for every subscription the page runs, opened on the first and closed
  // after the last (so the next one carries the headers as edited since); a dropped connection
  // is retried a few times rather than forever.
  const wsClient = graphqlWs.createClient({ url: socket.href, lazy: true, retryAttempts: 3, connectionParams: () => headers })
  const send = GraphiQL.createFetcher({
    url: endpoint.href,
    wsClient,
    // Apollo answers plain JSON; the multipart reader would only add a content negotiation.
    enableIncrementalDelivery: false,
  })
  const fetcher = (params, options) => {
    headers = (options && options.headers) || {}
    return send(params, options)
  }

  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher,
      defaultTabs: config.tabs,
      defaultEditorToolsVisibility: false,
      shouldPersistHeaders: false,
    }),
  )
})()

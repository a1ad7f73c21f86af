import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import type { AuthConfig } from '../../config/auth.schema.js'
import { assetSender, CSS, JS, type PageAsset, packageFile, pageHeaders, pagePolicy } from './page.assets.js'
import { isPageOperation, pageScriptFile, standaloneOperations } from './playground.plugin.js'

/** Where the live dashboard is served; its files are below it. */
export const DASHBOARD_PATH = '/dashboard'

// src/adapters/http and dist/adapters/http both sit three levels below the package root. The
// page's style is not compiled, so both read it from src/ (the package ships it); its scripts are
// (pageScriptFile).
const STYLE_FILE = fileURLToPath(new URL('../../../src/adapters/http/dashboard/dashboard.css', import.meta.url))
// The operations the page sends are this file's `Dashboard…`, validated and typed with the rest.
const OPERATIONS_FILE = fileURLToPath(new URL('../../../schema/operations.graphql', import.meta.url))

// The only files served: uPlot's and graphql-ws's prebuilt browser builds, and the page's own
// scripts and style. A name is looked up here and nowhere else.
const assets = async (): Promise<ReadonlyMap<string, PageAsset>> =>
  new Map([
    ['uplot.js', { file: packageFile('uplot', 'dist/uPlot.iife.min.js'), type: JS }],
    ['uplot.css', { file: packageFile('uplot', 'dist/uPlot.min.css'), type: CSS }],
    ['graphql-ws.js', { file: packageFile('graphql-ws', 'umd/graphql-ws.min.js'), type: JS }],
    ['dashboard.js', { file: await pageScriptFile('dashboard/dashboard.client'), type: JS }],
    ['dashboard.css', { file: STYLE_FILE, type: CSS }],
    ['dashboard.actions.js', { file: await pageScriptFile('dashboard/dashboard.actions'), type: JS }],
    ['dashboard.incidents.js', { file: await pageScriptFile('dashboard/dashboard.incidents'), type: JS }],
    ['dashboard.recordings.js', { file: await pageScriptFile('dashboard/dashboard.recordings'), type: JS }],
    ['dashboard.webhooks.js', { file: await pageScriptFile('dashboard/dashboard.webhooks'), type: JS }],
    // The sign-in (with `auth.oidc`): oidc-client-ts's prebuilt browser build and the page's module.
    ['oidc-client-ts.js', { file: packageFile('oidc-client-ts', 'dist/browser/oidc-client-ts.min.js'), type: JS }],
    ['signin.client.js', { file: await pageScriptFile('signin/signin.client'), type: JS }],
    // The modules dashboard.js imports, by the names its imports give.
    ['dashboard.page.js', { file: await pageScriptFile('dashboard/dashboard.page'), type: JS }],
    ['dashboard.service.js', { file: await pageScriptFile('dashboard/dashboard.service'), type: JS }],
    ['dashboard.row.js', { file: await pageScriptFile('dashboard/dashboard.row'), type: JS }],
    // The panel the actions and incidents scripts are both made with.
    ['dashboard.panel.js', { file: await pageScriptFile('dashboard/dashboard.panel'), type: JS }],
    // The task page's (/dashboard/task/<id>) scripts.
    ['taskpage.js', { file: await pageScriptFile('taskpage/taskpage.client'), type: JS }],
    ['timeline.export.js', { file: await pageScriptFile('taskpage/timeline.export'), type: JS }],
    ['taskpage.bands.js', { file: await pageScriptFile('taskpage/taskpage.bands'), type: JS }],
  ])

/** The text of each operation the page sends, by name, with the fragments it spreads. */
async function pageOperations(log: { error(object: object, message: string): void }): Promise<Record<string, string>> {
  const operations: Record<string, string> = {}
  try {
    for (const { name, text } of standaloneOperations(await readFile(OPERATIONS_FILE, 'utf8'))) {
      if (isPageOperation(name) && name !== undefined) operations[name] = text
    }
  } catch (error) {
    // The gateway serves on; the page says what it could not read.
    log.error({ err: error, file: OPERATIONS_FILE }, 'dashboard: its operations could not be read')
  }
  return operations
}

// Relative addresses throughout, so the page works below a reverse proxy's path prefix: its
// files are `dashboard/…`, the endpoint `graphql`, the playground `graphql#…`.
// The key box of both pages: one form, which dashboard.page.ts reads on either (the same sessionStorage).
const KEY_FORM = `  <form id="key-form" class="key" autocomplete="off">
    <label for="api-key">API key</label>
    <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck="false"
      placeholder="none needed without keys">
    <button type="submit">Use key</button>
    <button type="button" id="forget-key" hidden>Forget</button>
  </form>`

type SignIn = AuthConfig['oidc']

// With `auth.oidc`: the Sign in and Sign out buttons beside the key box, the provider's settings
// as a data block (never run), and the scripts that sign in.
const SIGN_IN = `  <div id="signin" class="signin">
    <span id="signed-in-as" class="who" hidden></span>
    <button type="button" id="sign-in">Sign in</button>
    <button type="button" id="sign-out" hidden>Sign out</button>
  </div>`
// `files` is where the page finds the dashboard's files (`dashboard/` from the dashboard, `../` from a
// task's page) and `home` the dashboard's own address from the page: the one redirect URI the
// provider knows, for either page.
const signInData = (oidc: NonNullable<SignIn>, files: string, home: string) =>
  `<script type="application/json" id="dashboard-signin">${safeJson({
    issuer: oidc.issuer,
    clientId: oidc.clientId,
    scope: oidc.scope,
    audience: oidc.audience,
    home,
  })}</script>
<script src="${files}oidc-client-ts.js"></script>
<script type="module" src="${files}signin.client.js"></script>
`

// An origin as a policy may name it: scheme, host and port, nothing that could end the directive.
const PLAIN_ORIGIN = /^https?:\/\/[a-z0-9.-]+(?::\d{1,5})?$/i
const DISCOVERED = ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'revocation_endpoint']

/**
 * The origins the sign-in fetches from: the issuer's, and those of the endpoints its discovery
 * names (Cognito's token endpoint is on its hosted UI's domain, not the issuer's). Read once, in
 * the background, so a provider down at start delays nothing: until it answers, the issuer's alone.
 */
function signInOrigins(issuer: string, log: { warn(object: object, message: string): void }): () => string[] {
  const origins = new Set([new URL(issuer).origin])
  const discovery = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
  fetch(discovery, { signal: AbortSignal.timeout(10_000) })
    .then((response) =>
      response.ok
        ? (response.json() as Promise<Record<string, unknown>>)
        : Promise.reject(new Error(`answered ${response.status}`)),
    )
    .then((document) => {
      for (const name of DISCOVERED) {
        const value = document[name]
        const origin = typeof value === 'string' && URL.canParse(value) ? new URL(value).origin : ''
        if (PLAIN_ORIGIN.test(origin)) origins.add(origin)
      }
    })
    .catch((error: unknown) =>
      log.warn({ err: error, discovery }, "dashboard: the sign-in provider's discovery could not be read"),
    )
  return () => [...origins]
}

const page = (operations: Record<string, string>, oidc: SignIn) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>livegate dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="dashboard/uplot.css">
<link rel="stylesheet" href="dashboard/dashboard.css">
</head>
<body>
<header class="top">
  <h1>livegate <span>live dashboard</span></h1>
  <span id="connection" class="pill" data-state="connecting">connecting</span>
${oidc ? SIGN_IN : ''}
${KEY_FORM}
  <a class="to-playground" href="graphql">Playground</a>
</header>
<p id="notice" class="notice" role="status">Loading…</p>
<main id="services"></main>
<section id="webhooks" class="webhooks" hidden>
  <h2>Webhook deliveries</h2>
  <table class="tasks">
    <thead><tr><th>Endpoint</th><th>State</th><th class="num">Pending</th><th class="num">Dead letters</th>
      <th>Last success</th><th>Last error</th><th></th></tr></thead>
    <tbody></tbody>
  </table>
</section>
<template id="service-template">
<section class="service">
  <header class="service-head">
    <h2 class="code"></h2>
    <span class="pill freshness" hidden></span>
  </header>
  <div class="stats">
    <div class="stat"><span class="value" data-stat="liveTasks">–</span><span class="label">live tasks</span></div>
    <div class="stat"><span class="value" data-stat="viewers">–</span><span class="label">viewers now</span></div>
    <div class="stat"><span class="value" data-stat="peakViewers">–</span>
      <span class="label">peak viewers, last hour</span></div>
    <div class="stat"><span class="value" data-stat="missing">–</span>
      <span class="label">missing start / end callbacks</span></div>
    <div class="stat"><span class="value" data-stat="delay">–</span>
      <span class="label">callback delay p50 / p99</span></div>
  </div>
  <figure class="chart-box">
    <figcaption>Viewers and live tasks, last hour</figcaption>
    <div class="chart"></div>
  </figure>
  <table class="tasks">
    <thead><tr><th>Task</th><th>User</th><th>Running</th><th>Status</th><th>Health</th><th class="num">Viewers</th>
      <th class="num">Peak</th><th>Input bitrate</th><th>Missing callbacks</th><th></th></tr></thead>
    <tbody></tbody>
  </table>
  <p class="empty-tasks" hidden>No tasks yet.</p>
</section>
</template>
<script type="application/json" id="dashboard-operations">${safeJson(operations)}</script>
<script src="dashboard/uplot.js"></script>
<script src="dashboard/graphql-ws.js"></script>
${oidc ? signInData(oidc, 'dashboard/', 'dashboard') : ''}<script type="module" src="dashboard/dashboard.js"></script>
<script type="module" src="dashboard/dashboard.actions.js"></script>
<script type="module" src="dashboard/dashboard.incidents.js"></script>
<script type="module" src="dashboard/dashboard.recordings.js"></script>
</body>
</html>
`

// The page of one task, at dashboard/task/<id>: its files are `../…` (the dashboard's), and its
// scripts find the endpoint from their own address (dashboard.page.ts).
const taskPage = (operations: Record<string, string>, oidc: SignIn) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>livegate task</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="../uplot.css">
<link rel="stylesheet" href="../dashboard.css">
</head>
<body class="task-page">
<header class="top">
  <h1><a href="../../dashboard">livegate</a> <span>task</span></h1>
  <span id="connection" class="pill" data-state="connecting">connecting</span>
${oidc ? SIGN_IN : ''}
${KEY_FORM}
  <a class="to-playground" href="../../graphql">Playground</a>
</header>
<p id="notice" class="notice" role="status">Loading…</p>
<section id="task" class="service">
  <header class="service-head"><h2 class="code" id="task-title"></h2>
    <span class="badge status" id="task-status"></span><span class="badge end-reason" id="task-end" hidden></span></header>
  <dl class="task-facts" id="task-facts"></dl>
  <ul class="outputs" id="task-outputs"></ul>
  <figure class="chart-box">
    <figcaption>Viewers and input bitrate over the task's life (by minute)</figcaption>
    <div class="chart" id="task-chart"></div>
    <p class="incident-window" id="task-incident" hidden></p>
  </figure>
</section>
<section id="timeline" class="service">
  <header class="service-head"><h2>Timeline</h2>
    <button type="button" id="export-json">Export JSON</button>
    <button type="button" id="export-csv">Export CSV</button></header>
  <table class="tasks timeline">
    <thead><tr><th>At</th><th>Source</th><th>Kind</th><th>What happened</th><th>Subject</th></tr></thead>
    <tbody></tbody>
  </table>
</section>
<script type="application/json" id="dashboard-operations">${safeJson(operations)}</script>
<script src="../uplot.js"></script>
<script src="../graphql-ws.js"></script>
${oidc ? signInData(oidc, '../', '../../dashboard') : ''}<script type="module" src="../taskpage.js"></script>
</body>
</html>
`

/**
 * The live dashboard at `/dashboard`: per service code the API key may read, audience and live
 * tasks over the last hour and a table of tasks, kept current over a graphql-ws subscription. The
 * page and its files come from livegate and its installed packages only; its policy lets it reach
 * this origin alone, with no inline script or style.
 */
export const dashboardPlugin: FastifyPluginAsync<{ oidc?: SignIn }> = async (app, { oidc }) => {
  // A JSON data block is never run, so the policy needs no inline script; `<` is escaped so no
  // text in an operation can close the element.
  const operations = await pageOperations(app.log)
  const html = page(operations, oidc)
  // The sign-in fetches the provider's discovery and token endpoint; its pages are navigated to.
  const connectOrigins = oidc ? signInOrigins(oidc.issuer, app.log) : () => []
  app.get(DASHBOARD_PATH, async (request, reply) =>
    pageHeaders(
      reply,
      pagePolicy(request.headers.host, { inlineStyles: false, connectOrigins: connectOrigins() }),
    ).send(html),
  )
  // The same page for every task: its script reads the id from the address and asks with the key.
  const taskHtml = taskPage(operations, oidc)
  app.get(`${DASHBOARD_PATH}/task/:id`, async (request, reply) =>
    pageHeaders(
      reply,
      pagePolicy(request.headers.host, { inlineStyles: false, connectOrigins: connectOrigins() }),
    ).send(taskHtml),
  )
  // The page's relative addresses need the path without a trailing slash (relative again, for a proxy's prefix).
  app.get(`${DASHBOARD_PATH}/`, async (_request, reply) => reply.redirect(`..${DASHBOARD_PATH}`, 302))
  app.get<{ Params: { file: string } }>(`${DASHBOARD_PATH}/:file`, assetSender(await assets()))
}

// `<` escaped, so no text in a data block can close it.
function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c')
}

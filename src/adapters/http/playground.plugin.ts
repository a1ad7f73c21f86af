import { createHash, randomUUID } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { type DocumentNode, type FragmentDefinitionNode, Kind, parse, visit } from 'graphql'
import { GRAPHQL_PATH } from '../graphql/http/graphql.plugin.js'
import { assetSender, CSS, JS, type PageAsset, packageFile, pageHeaders, pagePolicy } from './page.assets.js'

// Below the endpoint, so a proxy that forwards the endpoint forwards the page's files alike.
const PLAYGROUND_ASSETS_PATH = `${GRAPHQL_PATH}/playground`

interface PlaygroundTab {
  query: string
  /** The tab's variables as JSON text, filled in so the tab runs as opened. */
  variables?: string
}

// Shown when the sample file has no subscription, so the playground always has one to run.
const SUBSCRIPTION_TAB = `# Every notification stored from now on, pushed as it is committed
# (resume with after: <cursor>).
subscription LiveNotifications($types: [Int!], $after: String) {
  notificationReceived(filter: { types: $types }, after: $after) {
    __typename
    id
    type
    serviceCode
    taskId
    receivedAt
    cursor
  }
}
`

// src/adapters/http and dist/adapters/http both sit three levels below the package root.
const OPERATIONS_FILE = fileURLToPath(new URL('../../../schema/operations.graphql', import.meta.url))
// Example variables for each sample operation, by operation name: `{ "TaskDetail": { "id": "…" } }`.
const VARIABLES_FILE = fileURLToPath(new URL('../../../schema/operations.variables.json', import.meta.url))

// Run from source (tsx: the tests, a checkout without a build), this file is TypeScript.
const FROM_SOURCE = import.meta.url.endsWith('.ts')

/**
 * The file of a page's script (`dashboard/dashboard.client`, say): TypeScript type-checked by
 * src/adapters/http/pages.tsconfig.json, which `npm run build` compiles into dist/pages/. Run from
 * source, the script is compiled here instead, with TypeScript's transpileModule (its types are
 * only erased), into a folder of the system's temporary one named by the source's hash.
 */
export async function pageScriptFile(script: string): Promise<string> {
  if (!FROM_SOURCE) return fileURLToPath(new URL(`../../pages/src/adapters/http/${script}.js`, import.meta.url))
  const source = await readFile(fileURLToPath(new URL(`./${script}.ts`, import.meta.url)), 'utf8')
  const { default: ts } = await import('typescript')
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, verbatimModuleSyntax: true },
    fileName: `${script}.ts`,
  })
  const folder = join(tmpdir(), 'livegate-pages', createHash('sha256').update(outputText).digest('hex').slice(0, 16))
  const file = join(folder, `${script.replace(/\//g, '-')}.js`)
  await mkdir(folder, { recursive: true })
  // Written whole, then named: another writer (a process, or a second gateway in this one) reads
  // one whole file or the other, and each writer's partial file is its own.
  const partial = `${file}.${process.pid}.${randomUUID()}.partial`
  await writeFile(partial, outputText)
  await rename(partial, file)
  return file
}

// The only files served: the prebuilt browser builds the packages ship, and the page's script.
// A name is looked up here and nowhere else, so no request can name a path of its own.
const assets = async (): Promise<ReadonlyMap<string, PageAsset>> =>
  new Map([
    ['react.js', { file: packageFile('react', 'umd/react.production.min.js'), type: JS }],
    ['react-dom.js', { file: packageFile('react-dom', 'umd/react-dom.production.min.js'), type: JS }],
    ['graphiql.js', { file: packageFile('graphiql', 'graphiql.min.js'), type: JS }],
    ['graphiql.css', { file: packageFile('graphiql', 'graphiql.min.css'), type: CSS }],
    ['graphql-ws.js', { file: packageFile('graphql-ws', 'umd/graphql-ws.min.js'), type: JS }],
    ['playground.js', { file: await pageScriptFile('playground/playground.client'), type: JS }],
  ])

/** An operation of a sample file as it runs on its own: its text, then the fragments it spreads. */
export interface StandaloneOperation {
  name: string | undefined
  operation: 'query' | 'mutation' | 'subscription'
  text: string
}

// The operations the dashboard's page sends (schema/operations.graphql's `Dashboard…`): its own,
// read by dashboard.plugin.ts, and not offered as tabs.
export const isPageOperation = (name: string | undefined) => name !== undefined && /^Dashboard[A-Z]/.test(name)

/**
 * Each operation of a document with its leading comment and the fragments it spreads
 * (transitively), so each runs on its own. Throws what `parse` throws.
 */
export function standaloneOperations(source: string): StandaloneOperation[] {
  const document: DocumentNode = parse(source)
  const textOf = (node: { loc?: { start: number; end: number } | undefined }) =>
    node.loc ? source.slice(node.loc.start, node.loc.end) : ''
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition)
  }
  const spreadsOf = (node: Parameters<typeof visit>[0]) => {
    const names: string[] = []
    visit(node, { FragmentSpread: (spread) => void names.push(spread.name.value) })
    return names
  }
  const operations: StandaloneOperation[] = []
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue
    const used = new Set<string>()
    const pending = spreadsOf(definition)
    for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
      const fragment = fragments.get(name)
      if (used.has(name) || !fragment) continue
      used.add(name)
      pending.push(...spreadsOf(fragment))
    }
    // Fragments follow in the file's order, after the operation.
    const parts = [leadingComment(source, definition.loc?.start ?? 0) + textOf(definition)]
    for (const [name, fragment] of fragments) if (used.has(name)) parts.push(textOf(fragment))
    operations.push({ name: definition.name?.value, operation: definition.operation, text: `${parts.join('\n\n')}\n` })
  }
  return operations
}

// One tab per sample operation but the dashboard's, each running on its own. A file that does not
// parse is kept whole in one tab, where the editor shows what is wrong with it.
function sampleTabs(source: string, variables: Readonly<Record<string, unknown>>): PlaygroundTab[] {
  let operations: StandaloneOperation[]
  try {
    operations = standaloneOperations(source).filter((operation) => !isPageOperation(operation.name))
  } catch {
    return [{ query: source }]
  }
  const filled = (name: string | undefined) => {
    const values = name !== undefined && Object.hasOwn(variables, name) ? variables[name] : undefined
    return values !== undefined ? { variables: JSON.stringify(values, null, 2) } : {}
  }
  const tabs: PlaygroundTab[] = operations.map((operation) => ({ query: operation.text, ...filled(operation.name) }))
  if (tabs.length === 0) return [{ query: source }]
  if (!operations.some((operation) => operation.operation === 'subscription'))
    tabs.push({ query: SUBSCRIPTION_TAB, ...filled('LiveNotifications') })
  return tabs
}

// The variables file is optional; one that cannot be read leaves the tabs without variables.
async function sampleVariables(log: { warn(object: object, message: string): void }): Promise<Record<string, unknown>> {
  try {
    const value: unknown = JSON.parse(await readFile(VARIABLES_FILE, 'utf8'))
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
    log.warn({ file: VARIABLES_FILE }, 'playground: the sample variables are not a JSON object')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      log.warn({ err: error, file: VARIABLES_FILE }, 'playground: no sample variables')
  }
  return {}
}

// The `#` lines right above a definition describe it.
function leadingComment(source: string, start: number): string {
  const lines = source.slice(0, start).split('\n')
  lines.pop()
  const comment: string[] = []
  for (let line = lines.pop(); line?.trimStart().startsWith('#'); line = lines.pop()) comment.unshift(line.trim())
  return comment.length > 0 ? `${comment.join('\n')}\n` : ''
}

const qualityOf = (accept: string, types: readonly string[]) => {
  let best = 0
  for (const entry of accept.split(',')) {
    const [type = '', ...parameters] = entry.split(';').map((part) => part.trim().toLowerCase())
    if (!types.includes(type)) continue
    const q = parameters.find((parameter) => parameter.startsWith('q='))
    best = Math.max(best, q ? Number(q.slice(2)) || 0 : 1)
  }
  return best
}

// A browser's navigation: HTML asked for, and not ranked below the GraphQL answer types. A GET
// that carries a query is always an operation for Apollo, whatever it accepts.
function wantsPage(request: FastifyRequest): boolean {
  if ('query' in (request.query as Record<string, unknown>)) return false
  const accept = request.headers.accept ?? ''
  const html = qualityOf(accept, ['text/html'])
  return html > 0 && html >= qualityOf(accept, ['application/json', 'application/graphql-response+json'])
}

// GraphiQL's stylesheet carries its fonts and icons as data: URLs, and its dialogs inject `<style>`
// elements whose text varies at run time: hence inline styles, never inline scripts.
const playgroundPolicy = (host: string | undefined) => pagePolicy(host, { inlineStyles: true })

function pageHtml(tabs: PlaygroundTab[]): string {
  // Relative to the endpoint's own URL, so the page works below a proxy's path prefix too.
  const base = `${PLAYGROUND_ASSETS_PATH.slice(1)}/`
  // A JSON data block is never run, so the policy needs no inline script; `<` is escaped so no
  // text in an operation can close the element.
  const config = JSON.stringify({ tabs }).replace(/</g, '\\u003c')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>livegate GraphQL playground</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}graphiql.css">
</head>
<body style="margin:0">
<div id="graphiql" style="height:100vh">Loading the playground…</div>
<script type="application/json" id="playground-config">${config}</script>
<script src="${base}react.js"></script>
<script src="${base}react-dom.js"></script>
<script src="${base}graphql-ws.js"></script>
<script src="${base}graphiql.js"></script>
<script type="module" src="${base}playground.js"></script>
</body>
</html>
`
}

/**
 * The offline GraphQL playground: GraphiQL at `/graphql` for a browser (a GET that asks for HTML
 * and carries no query), every other request there left to Apollo. The page and its files come
 * from livegate and its installed packages only, and its policy lets it reach this origin alone.
 */
export const playgroundPlugin: FastifyPluginAsync = Object.assign(
  async (app: Parameters<FastifyPluginAsync>[0]) => {
    const operations = await readFile(OPERATIONS_FILE, 'utf8').catch((error: unknown) => {
      app.log.warn({ err: error, file: OPERATIONS_FILE }, 'playground: no sample operations')
      return '{ notifications(first: 5) { totalCount } }\n'
    })
    const page = pageHtml(sampleTabs(operations, await sampleVariables(app.log)))

    // Apollo owns the GET route at the endpoint, so the page is answered before routing reaches it.
    app.addHook('onRequest', async (request, reply) => {
      if (
        (request.method !== 'GET' && request.method !== 'HEAD') ||
        request.routeOptions.url !== GRAPHQL_PATH ||
        !wantsPage(request)
      )
        return
      return pageHeaders(reply, playgroundPolicy(request.headers.host)).header('vary', 'accept').send(page)
    })

    app.get<{ Params: { file: string } }>(`${PLAYGROUND_ASSETS_PATH}/:file`, assetSender(await assets()))
  },
  // Not encapsulated: the hook must see the endpoint's route, which another plugin registers.
  { [Symbol.for('skip-override')]: true },
)

import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { type DocumentNode, Kind, type OperationDefinitionNode, parse, print } from 'graphql'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { demoCommand } from '../../src/adapters/cli/demo.command.js'
import { loadConfig } from '../../src/config/index.js'
import { startGateway } from '../../src/gateway.assembly.js'
import { freePort } from '../support/free.port.js'
import { send } from '../support/gateway.fixture.js'
import { subscribe } from '../support/subscription.client.js'

// Every example of the guide runs against `livegate demo` as written: each GraphQL operation of docs/ and the
// README (its `$id` a live task's id, `$eventId` a delivery's, `$since` a time), and each `curl` line aimed at
// http://127.0.0.1:4000. A new user pasted the guide into the demo and met `TESTING`, `ops` and placeholder ids.
const run = promisify(execFile)
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const PAGES = [
  'README.md',
  ...readdirSync(new URL('../../docs/', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** Each operation of the guide's ```graphql blocks, alone in its document (with the block's fragments). */
const OPERATIONS = PAGES.flatMap((path) =>
  [...read(path).matchAll(/```graphql\n([\s\S]*?)```/g)].flatMap((match) => {
    const document = parse(match[1] as string)
    const fragments = document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION)
    return document.definitions
      .filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION)
      .map((operation) => {
        const alone: DocumentNode = { kind: Kind.DOCUMENT, definitions: [operation, ...fragments] }
        return [
          `${path} ${operation.operation} ${operation.name?.value ?? '(anonymous)'}`,
          operation,
          print(alone),
        ] as const
      })
  }),
)

/** The guide's `curl` commands aimed at the default address, each whole (its `\` continuations joined). */
const CURLS = PAGES.flatMap((path) =>
  [...read(path).matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((match) =>
    (match[1] as string)
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .filter((line) => /^curl .*http:\/\/127\.0\.0\.1:4000\//.test(line))
      .map((line) => [path, line] as const),
  ),
)

let url = ''
const variables: Record<string, unknown> = {}
let stop: (signal: string) => void = () => {}
let demo: Promise<number> | undefined

const graphql = async (query: string, vars: Record<string, unknown> = {}) =>
  send({
    method: 'POST',
    url: `${url}/graphql`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables: vars }),
  })

beforeAll(async () => {
  const lines: string[] = []
  const stopSignal = new Promise<string>((resolve) => (stop = resolve))
  const env = { LOG_LEVEL: 'silent' }
  // The demo as `npm run demo` runs it (the day profile), on ports of its own.
  demo = demoCommand(
    ['--port', '0', '--simulator-port', String(await freePort())],
    loadConfig({ env }),
    { env, out: (line) => lines.push(line), err: (line) => lines.push(line), stopSignal, startGateway },
    { databaseUrlOrigin: 'the config file' },
  )
  /** The first answer `read` gives that is not undefined, asked again until it comes (or the timeout). */
  const until = <T>(read: () => Promise<T | undefined> | T | undefined, timeout = 120_000) =>
    vi.waitFor(
      async () => {
        const value = await read()
        if (value === undefined) throw new Error('not yet')
        return value
      },
      { timeout, interval: 500 },
    )
  // Answers of several shapes, read by path.
  const data = async (query: string): Promise<any> => (await graphql(query)).body.data
  url = await until(() => /the gateway is at (http:\/\/\S+?),/.exec(lines.join('\n'))?.[1])
  // What the examples name: a live task, a webhook delivery of the demo's endpoint, and (within the first minute,
  // as getting-started says) a recording.
  variables.id = await until(
    async () =>
      (await data('{ tasks(filter: { status: [LIVE] }, first: 1) { edges { node { id } } } }'))?.tasks.edges[0]?.node
        .id,
  )
  variables.eventId = await until(
    async () =>
      (await data('{ webhookEndpoints { deliveries(first: 1) { edges { node { eventId } } } } }'))?.webhookEndpoints[0]
        ?.deliveries.edges[0]?.node.eventId,
  )
  variables.since = new Date(Date.now() - 60_000).toISOString()
  await until(async () =>
    (await data('{ recordings(first: 1) { totalCount } }'))?.recordings.totalCount > 0 ? true : undefined,
  )
}, 300_000)

afterAll(async () => {
  stop('SIGTERM')
  expect(await demo).toBe(0)
}, 60_000)

describe('every example of the guide runs against `livegate demo`', () => {
  it('finds the examples: operations of every kind, and the curl lines', () => {
    expect(new Set(OPERATIONS.map(([, operation]) => operation.operation))).toEqual(
      new Set(['query', 'mutation', 'subscription']),
    )
    expect(CURLS.length).toBeGreaterThan(1)
  })

  it.each(OPERATIONS)(
    '%s',
    async (_name, operation, query) => {
      const wanted = Object.fromEntries(
        (operation.variableDefinitions ?? []).map((definition) => {
          const name = definition.variable.name.value
          return [name, variables[name] ?? null]
        }),
      )
      if (operation.operation === 'subscription') {
        const subscription = subscribe(url, query, wanted)
        try {
          await subscription.waitFor(1, 120_000)
          expect(subscription.errors).toEqual([])
        } finally {
          await subscription.dispose()
        }
        return
      }
      const answer = await graphql(query, wanted)
      expect(answer.status, answer.text).toBe(200)
      expect(answer.body.errors, answer.text).toBeUndefined()
      expect(answer.body.data, answer.text).toBeTruthy()
      // Not an answer about nothing: a service code the demo does not have reads as null.
      for (const value of Object.values(answer.body.data as object)) expect(value, answer.text).not.toBeNull()
    },
    180_000,
  )

  it.each(CURLS)('%s: %s', async (_path, line) => {
    const { stdout } = await run('sh', ['-c', line.replaceAll('http://127.0.0.1:4000', url)])
    const answer = JSON.parse(stdout) as { data?: unknown; errors?: unknown }
    expect(answer.errors, stdout).toBeUndefined()
    expect(answer.data, stdout).toBeTruthy()
  })
})

import { readdirSync, readFileSync } from 'node:fs'
import { buildSchema, type GraphQLSchema, parse, validate } from 'graphql'
import { describe, expect, it } from 'vitest'
import { demoCommand } from '../../src/adapters/cli/demo.command.js'
import { loadConfig } from '../../src/config/index.js'
import { startGateway } from '../../src/gateway.assembly.js'
import { driverName } from '../support/database.fixture.js'
import { send, test } from '../support/gateway.fixture.js'

// Every GraphQL operation a user is shown (README.md and docs/, schema/operations.graphql, the playground's
// tabs, what `livegate demo` prints) parses and validates against the emitted schema: a renamed
// field fails here, not in the first query a new user pastes.

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const SCHEMA: GraphQLSchema = buildSchema(read('schema/schema.graphql'))

/** The validation errors of a document against the emitted schema; none is what passes. */
function problemsOf(source: string): string[] {
  try {
    return validate(SCHEMA, parse(source)).map((error) => error.message)
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)]
  }
}

/** The guide's pages: the README and every page of docs/. */
const PAGES = [
  'README.md',
  ...readdirSync(new URL('../../docs/', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** The ```graphql blocks of the guide, each with its page. */
const GUIDE_BLOCKS = PAGES.flatMap((path) =>
  [...read(path).matchAll(/```graphql\n([\s\S]*?)```/g)].map((match) => [path, match[1] as string] as const),
)

describe(`the operations users are shown validate against the schema (${driverName})`, () => {
  it.each(GUIDE_BLOCKS.map(([path, block], index) => [path, index + 1, block] as const))(
    '%s, graphql block %i',
    async (_path, _index, block) => {
      expect(problemsOf(block), block).toEqual([])
    },
  )

  it('README.md has graphql blocks, and schema/operations.graphql validates whole', async () => {
    expect(GUIDE_BLOCKS.filter(([path]) => path === 'README.md').length).toBeGreaterThan(0)
    expect(problemsOf(read('schema/operations.graphql'))).toEqual([])
  })

  test('every tab of the playground', async ({ gateway }) => {
    const page = await send({ method: 'GET', url: `${gateway.url}/graphql`, headers: { accept: 'text/html' } })
    expect(page.status).toBe(200)
    const config = /<script type="application\/json" id="playground-config">([\s\S]*?)<\/script>/.exec(page.text)?.[1]
    const tabs = (JSON.parse(config ?? '{}') as { tabs?: Array<{ query: string }> }).tabs ?? []
    expect(tabs.length).toBeGreaterThan(1)
    for (const tab of tabs) expect(problemsOf(tab.query), tab.query).toEqual([])
  })

  test("the query `livegate demo` prints, and it runs on the demo's gateway", async () => {
    const lines: string[] = []
    let stop: (signal: string) => void = () => {}
    const stopSignal = new Promise<string>((resolve) => (stop = resolve))
    const env = { LOG_LEVEL: 'silent' }
    const demo = demoCommand(
      ['--port', '0', '--simulator-port', '0', '--sessions', '1'],
      loadConfig({ env }),
      {
        env,
        out: (line) => lines.push(line),
        err: (line) => lines.push(line),
        stopSignal,
        startGateway,
      },
      { databaseUrlOrigin: 'the config file' },
    )
    try {
      await expect.poll(() => lines.some((line) => line.includes('curl ')), { timeout: 60_000 }).toBe(true)
      const curl = lines.find((line) => line.includes('curl ')) as string
      const url = /curl -s (\S+)/.exec(curl)?.[1] as string
      const body = /-d '(.*)'$/.exec(curl)?.[1] as string
      const { query } = JSON.parse(body) as { query: string }
      expect(problemsOf(query), query).toEqual([])
      const answer = await send({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body })
      expect(answer.status, answer.text).toBe(200)
      expect(answer.body.errors, answer.text).toBeUndefined()
      // The archive's query the demo names validates too, and runs.
      const archive =
        /see (\{.*\}), recording\.ready/.exec(lines.find((line) => line.includes('recording.missing')) ?? '')?.[1] ?? ''
      expect(problemsOf(archive), archive).toEqual([])
      const recordings = await send({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: archive }),
      })
      expect(recordings.body.errors, recordings.text).toBeUndefined()
    } finally {
      stop('SIGTERM')
      expect(await demo).toBe(0)
    }
  }, 120_000)
})

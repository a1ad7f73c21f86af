import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeOnServer } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { type ServeProcess, startServeProcess } from '../support/livegate.process.js'
import { ownedDir, runAsPostgres, topologyAvailable } from '../support/postgres.topology.js'

// A newcomer follows docs/scaling.md › "Bring it up on one machine": its three ```sh blocks run here as the page
// writes them (the topology up, `livegate serve` with the URLs it wrote, the topology down), on free ports, and the
// gateway they bring up reads from the replica. A block that no longer works fails here before a user meets it.

const page = readFileSync(new URL('../../docs/scaling.md', import.meta.url), 'utf8')
const section = page.slice(page.indexOf('### Bring it up on one machine'), page.indexOf('### Reads from streaming'))
const [up, serve, down] = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string)

/** Runs a block of the page with bash, as the `postgres` user when the tests run as root (as the page says). */
function runBlock(block: string, env: Record<string, string>): Promise<string> {
  const exported = Object.entries(env).map(([name, value]) => `export ${name}=${value}`)
  const script = [...exported, block].join('\n')
  // pg_ctl's server and PgBouncer outlive the shell: its exit is what is awaited, not its pipes' end.
  return runAsPostgres('bash', ['-c', script])
}

const describeTopology = topologyAvailable() ? describeOnServer : (name: string) => it.skip(name, () => {})

describeTopology('docs/scaling.md: a newcomer brings the topology up on one machine', () => {
  let dir: string
  let env: Record<string, string>
  let gateway: ServeProcess | undefined

  beforeAll(async () => {
    dir = ownedDir('livegate-scaling-')
    env = {
      D: dir,
      PRIMARY: String(await freePort()),
      BOUNCER: String(await freePort()),
      REPLICA: String(await freePort()),
    }
  })

  afterAll(async () => {
    if (gateway && gateway.process.exitCode === null) {
      const exited = new Promise((resolve) => gateway?.process.once('exit', resolve))
      gateway.process.kill('SIGTERM')
      await exited
    }
    if (down) await runBlock(down, env).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  })

  it('runs its blocks as written, and the gateway they start reads from the replica', async () => {
    expect([up, serve, down].every((block) => block !== undefined)).toBe(true)
    expect(await runBlock(up as string, env)).toContain(`the topology is up in D=${dir}`)
    // The page starts `npx livegate serve` with the URLs the script wrote; the test starts the checkout's.
    expect((serve as string).trim()).toBe('env $(cat $D/livegate.env) npx livegate serve')
    const urls = Object.fromEntries(
      readFileSync(join(dir, 'livegate.env'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('=', 2) as [string, string]),
    )
    expect(Object.keys(urls).sort()).toEqual(['DATABASE_DIRECT_URL', 'DATABASE_READ_URLS', 'DATABASE_URL'])
    gateway = await startServeProcess([], {
      ...process.env,
      ...urls,
      PORT: '0',
      HOST: '127.0.0.1',
      LIVEGATE_DATA_DIR: join(dir, 'gateway'),
      LOG_LEVEL: 'info',
    })
    const url = gateway.url
    type Ready = { ready: boolean; replicas: Array<{ state: string }> }
    await expect
      .poll(async () => ((await (await fetch(`${url}/readyz`)).json()) as Ready).replicas?.[0]?.state, {
        timeout: 30_000,
      })
      .toBe('serving')
    const answer = (await (
      await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ taskCounts { live } }' }),
      })
    ).json()) as { data?: unknown; errors?: unknown; extensions?: { readFrom?: string } }
    expect(answer.errors).toBeUndefined()
    expect(answer.extensions?.readFrom).toBe('replica')
  }, 300_000)
})

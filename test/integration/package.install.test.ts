import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, type ServeProcess, startListeningProcess } from '../support/livegate.process.js'

// What a production team does: `npm pack` here, then, in an empty folder, `npm install` of that
// tarball (its dependencies from the npm registry) and `livegate serve` through the bin npm
// linked. Slow (a build, then an install of every production dependency), and it needs the npm
// registry, as `npm ci` does.
const run = promisify(execFile)
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=warn'], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
    timeout: 900_000,
  })

const work = mkdtempSync(join(tmpdir(), 'livegate-package-'))
const app = join(work, 'app')
const installed = join(app, 'node_modules', 'livegate')

describe('the npm package', () => {
  let tarball = ''
  let packed: string[] = []
  let installOutput = ''
  let serve: ServeProcess | undefined

  beforeAll(async () => {
    // --json: the packed file list; lifecycle scripts (prepare, prepack: the build) print to stderr then.
    const { stdout } = await npm(['pack', '--json', '--pack-destination', work], ROOT)
    const report = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string; files: { path: string }[] }]
    tarball = join(work, report[0].filename)
    packed = report[0].files.map((file) => file.path)

    // An empty project, as `npm init -y` would leave it, with the review docs/install.md asks for: the
    // one install script among livegate's dependencies (a version-scheme notice of protobufjs)
    // need not run. npm 11 also lists livegate's own `prepare` (it builds a checkout) for a package
    // from a file or git, not from a registry, under the name npm gives such a source; it does not
    // run for a packed tarball.
    mkdirSync(app)
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({
        name: 'an-app',
        version: '1.0.0',
        private: true,
        allowScripts: { [`file:${tarball}`]: false, '@apollo/protobufjs': false },
      }),
    )
    const result = await npm(['install', tarball], app)
    installOutput = result.stdout + result.stderr
  }, 1_200_000)

  afterAll(() => {
    serve?.process.kill('SIGKILL')
    rmSync(work, { recursive: true, force: true })
  })

  it("leaves the checkout's own bin runnable: the build after `prepack` writes dist/main.js executable", async () => {
    // `npx livegate` in a checkout runs dist/main.js as a file through the link npm made once; prepack
    // deletes dist/ and rebuilds it, so a build that drops the execute bit answers "Permission denied".
    const main = join(ROOT, 'dist', 'main.js')
    expect(statSync(main).mode & 0o111).not.toBe(0)
    const { stdout } = await run(main, ['--version'], { cwd: ROOT })
    expect(stdout).toMatch(/^livegate \d+\.\d+\.\d+/)
  })

  it('ships what runs and nothing else: no tests, benches or TypeScript sources', () => {
    expect(packed).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        // The README's links lead into its guide and the changelog, installed too.
        'docs/configuration.md',
        'CHANGELOG.md',
        'package.json',
        'dist/main.js',
        'schema/migrations/meta/_journal.json',
        'schema/schema.graphql',
        'schema/operations.graphql',
        'dist/pages/src/adapters/http/dashboard/dashboard.client.js',
        'dist/pages/src/adapters/http/dashboard/dashboard.actions.js',
        'dist/pages/src/adapters/http/playground/playground.client.js',
        'src/adapters/http/dashboard/dashboard.css',
      ]),
    )
    const own = packed.filter((path) => !path.startsWith('node_modules/'))
    expect(
      own.filter(
        (path) =>
          path.startsWith('test/') || path.endsWith('.ts') || path.endsWith('.map') || path.includes('tsbuildinfo'),
      ),
    ).toEqual([])
    // The pages' compile emits the codegen types' module too (their imports are types only): not shipped.
    expect(own.filter((path) => path.startsWith('dist/pages/schema/'))).toEqual([])
    // postgres.js travels inside the package, patched (src/storage/patches): see docs/install.md.
    expect(packed).toContain('node_modules/postgres/src/connection.js')
    expect(packed).toContain('node_modules/drizzle-orm/postgres-js/driver.js')
  })

  it('installs with no script of its own and no warning about install scripts', () => {
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).scripts?.postinstall).toBeUndefined()
    expect(installOutput).not.toMatch(/install scripts|allowScripts|approve-scripts/i)
    // The bundled postgres.js is the patched one, beside livegate (with the Drizzle that loads it),
    // whatever copy the app has.
    expect(readFileSync(join(installed, 'node_modules', 'postgres', 'src', 'connection.js'), 'utf8')).toContain(
      'livegate: a write scheduled before the socket closed',
    )
    expect(readdirSync(join(installed, 'node_modules'))).toEqual(expect.arrayContaining(['drizzle-orm', 'postgres']))
    expect(readdirSync(join(app, 'node_modules', '.bin'))).toContain('livegate')
  })

  it('runs `livegate serve` from the installed bin: /healthz, the migrations, the pages', async () => {
    const config = join(work, 'livegate.json')
    writeFileSync(
      config,
      JSON.stringify({ port: 0, services: [{ serviceCode: 'TESTING', secrets: [{ env: 'TESTING_SECRET' }] }] }),
    )
    const env = { ...process.env, TESTING_SECRET: 'abc', LIVEGATE_DATA_DIR: 'memory://', LOG_LEVEL: 'info' }
    serve = await startListeningProcess(
      [join(app, 'node_modules', '.bin', 'livegate'), 'serve', '--config', config],
      env,
      /livegate listening on (http:\/\/[^,\s]+)/,
      app,
    )
    const { url } = serve

    const health = await fetch(`${url}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ ok: true })
    // Ready means the database answered, after the migrations the package ships were applied.
    expect((await fetch(`${url}/readyz`)).status).toBe(200)
    const tasks = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ tasks(first: 1) { totalCount } }' }),
    })
    expect(await tasks.json()).toEqual({ data: { tasks: { totalCount: 0 } } })
    // The pages' own files: their scripts compiled into dist/pages, the dashboard's style from the
    // package's src/adapters/http; and the playground, which reads schema/operations.graphql.
    for (const page of [
      '/dashboard',
      '/dashboard/dashboard.js',
      '/dashboard/dashboard.actions.js',
      '/dashboard/dashboard.css',
      '/dashboard/uplot.js',
      '/graphql/playground/playground.js',
    ]) {
      expect((await fetch(`${url}${page}`)).status, page).toBe(200)
    }
    const playground = await fetch(`${url}/graphql`, { headers: { accept: 'text/html' } })
    expect(playground.status).toBe(200)
    expect(await playground.text()).toContain('playground')
  }, 600_000)

  it('logs JSON lines when its output is not a terminal, and readable lines when asked', async () => {
    const lines = (serve?.output() ?? '').split('\n').filter((line) => line.trim() !== '')
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow()
    const config = join(work, 'livegate.json')
    const env = {
      ...process.env,
      TESTING_SECRET: 'abc',
      LIVEGATE_DATA_DIR: 'memory://',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'pretty',
    }
    const readable = await startListeningProcess(
      [join(app, 'node_modules', '.bin', 'livegate'), 'serve', '--config', config],
      env,
      /livegate listening on (http:\/\/[^,\s]+)/,
      app,
    )
    try {
      expect(readable.output()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: .*livegate listening on http/m)
    } finally {
      readable.process.kill('SIGKILL')
    }
  }, 600_000)
})

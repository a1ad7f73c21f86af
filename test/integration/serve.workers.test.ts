import type { ChildProcess } from 'node:child_process'
import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { createClient } from 'graphql-ws'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { signCallback } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { openTestDatabase, type TestDatabase, describeOnServer } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { sendOnce } from '../support/http.once.js'
import { graphql } from '../support/graphql.client.js'
import { LIVEGATE_COMMAND, ROOT, startServeProcess } from '../support/livegate.process.js'
import { parseMetrics } from '../support/metrics.scrape.js'

const config = (dir: string) => {
  const file = join(dir, 'livegate.json')
  writeFileSync(file, JSON.stringify({ port: 0, services: [{ serviceCode: 'TESTING', secrets: [SECRET] }] }))
  return file
}

describe('serve --workers on the embedded database', () => {
  it('refuses more than one worker with one line saying why, and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'livegate-workers-'))
    const result = await promisify(execFile)(
      process.execPath,
      [...LIVEGATE_COMMAND, 'serve', '--config', config(dir), '--workers', '2'],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: '', LIVEGATE_DATA_DIR: 'memory://' },
      },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    )
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toMatch(/^livegate: --workers 2: the embedded PGlite database allows one connection/)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
  }, 120_000)
})

/** Posts one signed callback; a single try, as a test of what one delivery gets. */
async function post(baseUrl: string, fields: Record<string, string>): Promise<number> {
  const signed = signCallback(fields, {
    url: `${baseUrl}/callbacks`,
    method: 'POST',
    secret: SECRET,
    headerPrefix: 'svc',
    nowMs: Date.now(),
  })
  return (await sendOnce(signed.url, 'POST', signed.headers, signed.body)).status
}

/**
 * Delivers one signed callback as the service does: the same request again until it is answered
 * 200 (a worker that is stopping answers 503 to what reaches it meanwhile, as a stopping gateway does).
 */
async function deliver(baseUrl: string, fields: Record<string, string>): Promise<void> {
  const signed = signCallback(fields, {
    url: `${baseUrl}/callbacks`,
    method: 'POST',
    secret: SECRET,
    headerPrefix: 'svc',
    nowMs: Date.now(),
  })
  for (let attempt = 0; attempt < 100; attempt++) {
    if ((await sendOnce(signed.url, 'POST', signed.headers, signed.body)).status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`callback ${fields.seq} was not taken in 100 tries`)
}

type Received = { notificationReceived: { cursor: string; fields: Record<string, string> } }
const FOLLOW =
  `subscription($t: String!, $after: String) { notificationReceived(after: $after, filter: { taskIds: [$t] }) { ` +
  `cursor fields } }`

/**
 * A subscriber as an application writes one: when its socket closes, it connects again (through
 * the port, so to whichever worker) and resumes after the last cursor it saw.
 */
function resumingSubscriber(baseUrl: string, taskId: string) {
  const seqs: string[] = []
  let cursor: string | undefined
  let closes = 0
  let done = false
  let dispose = () => {}
  const open = () => {
    const client = createClient({
      url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => {},
    })
    const reopen = () => {
      if (done) return
      closes++
      void client.dispose()
      setTimeout(open, 250)
    }
    client.on('closed', reopen)
    client.subscribe<Received>(
      { query: FOLLOW, variables: { t: taskId, ...(cursor ? { after: cursor } : {}) } },
      {
        next: (result) => {
          const event = result.data?.notificationReceived
          if (!event) return
          cursor = event.cursor
          seqs.push(event.fields.seq as string)
        },
        error: () => {},
        complete: () => {},
      },
    )
    dispose = () => void client.dispose()
  }
  open()
  return {
    seqs,
    closes: () => closes,
    stop() {
      done = true
      dispose()
    },
  }
}

// Several processes share only a server: PGlite is one process's own database.
describeOnServer('serve --workers 2 on a PostgreSQL server: two gateways behind one port', () => {
  let db: TestDatabase
  let primary: ChildProcess
  let url = ''
  let output = () => ''
  let sql: postgres.Sql

  // Each on a connection of its own: a kept-alive one may lead to a worker that has since stopped.
  const readiness = async () =>
    JSON.parse((await sendOnce(`${url}/readyz`, 'GET', {})).text || '{"ready":false,"workers":[]}') as {
      ready: boolean
      workers: Array<{ worker: number; pid: number; ready: boolean }>
    }
  const scrape = async () => {
    for (;;) {
      const answer = await sendOnce(`${url}/metrics`, 'GET', {})
      if (answer.status === 200) return parseMetrics(answer.text)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  const sum = (samples: Awaited<ReturnType<typeof scrape>>, name: string, labels: Record<string, string> = {}) =>
    samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((total, s) => total + s.value, 0)
  // A worker's start (tsx compiling, on a busy machine) takes a while: a limit against hanging, not a measure.
  const twoReady = async () => {
    for (
      const limit = Date.now() + 240_000;
      Date.now() < limit;
      await new Promise((resolve) => setTimeout(resolve, 500))
    ) {
      const report = await readiness().catch(() => undefined)
      if (report?.ready && report.workers.length === 2) return
    }
    throw new Error(`two workers were not ready within 240 s: ${output()}`)
  }
  const stored = async (taskId: string) =>
    (await sql`select count(*)::int as n from callbacks where task_id = ${taskId}`)[0]?.n as number

  beforeAll(async () => {
    db = await openTestDatabase()
    sql = postgres(db.url as string, { max: 1, onnotice: () => {} })
    const dir = mkdtempSync(join(tmpdir(), 'livegate-workers-'))
    const serve = await startServeProcess(['--config', config(dir), '--workers', '2'], {
      ...process.env,
      DATABASE_URL: db.url as string,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    primary = serve.process
    url = serve.url
    output = serve.output
    await twoReady()
  }, 600_000)

  afterAll(async () => {
    // Its workers end with it: a worker whose primary is gone exits.
    primary?.kill('SIGKILL')
    await sql?.end()
    await db?.drop()
  })

  it('stores each callback sent through the port once, ' +
    'whichever worker took it, and logs name the worker', async () => {
    const taskId = `workers-${Date.now()}`
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, seq) =>
        post(url, { ...sampleCallbacks(taskId).liveResume, seq: String(seq) } as Record<string, string>),
      ),
    )
    expect(answers.every((status) => status === 200)).toBe(true)
    expect(await stored(taskId)).toBe(20)
    // The log is read as far as every older transaction of the server has ended, and a busy
    // server (other tests' databases share its transaction ids) may hold one open a moment longer.
    const counted = async () =>
      (
        await graphql<{ notifications: { totalCount: number } }>(
          { url },
          `query($t: String!) { notifications(filter: { taskIds: [$t] }) { totalCount } }`,
          { t: taskId },
        )
      ).data?.notifications.totalCount
    await expect.poll(counted).toBe(20)
    const keptBy = new Set(
      output()
        .split('\n')
        .filter((line) => line.includes('"callback kept"'))
        .map((line) => (JSON.parse(line) as { worker: number }).worker),
    )
    expect(keptBy.size).toBe(2)
  }, 300_000)

  it('/metrics and /readyz answer for every worker', async () => {
    const ready = await readiness()
    expect(ready.ready).toBe(true)
    expect(ready.workers).toHaveLength(2)
    const samples = await scrape()
    expect(sum(samples, 'livegate_workers')).toBe(2)
    // The callbacks of the test above were kept by both workers; the scrape counts all of them.
    expect(sum(samples, 'livegate_callbacks_total', { verdict: 'kept' })).toBeGreaterThanOrEqual(20)
  }, 120_000)

  it('a subscriber whose worker stops reconnects, resumes by ' +
    'cursor and misses nothing; the worker is replaced', async () => {
    const taskId = `resume-${Date.now()}`
    const subscribers = [
      resumingSubscriber(url, taskId),
      resumingSubscriber(url, taskId),
      resumingSubscriber(url, taskId),
    ]
    let seq = 0
    const next = () =>
      deliver(url, { ...sampleCallbacks(taskId).liveResume, seq: String(seq++) } as Record<string, string>)
    try {
      await expect
        .poll(
          async () => {
            await next()
            return Math.min(...subscribers.map((s) => s.seqs.length))
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBeGreaterThan(0)
      // Stop workers one at a time, each time letting it be replaced, until a subscriber's worker was one of them.
      for (let round = 0; round < 4 && !subscribers.some((s) => s.closes() > 0); round++) {
        const victim = (await readiness()).workers[round % 2]?.pid as number
        process.kill(victim, 'SIGTERM')
        for (let i = 0; i < 5; i++) await next()
        await expect
          .poll(async () => (await readiness()).workers.some((w) => w.pid === victim), { timeout: 60_000 })
          .toBe(false)
        await twoReady()
      }
      expect(subscribers.some((s) => s.closes() > 0)).toBe(true)
      for (let i = 0; i < 5; i++) await next()
      const sent = Array.from({ length: seq }, (_, i) => String(i))
      for (const subscriber of subscribers) {
        // Each saw every callback from its first on, once and in order: what it missed while away was replayed.
        await expect.poll(() => subscriber.seqs.at(-1), { timeout: 60_000 }).toBe(sent.at(-1))
        const first = Number(subscriber.seqs[0])
        expect(subscriber.seqs).toEqual(sent.slice(first))
      }
      expect(sum(await scrape(), 'livegate_worker_restarts_total', { reason: 'stopped' })).toBeGreaterThanOrEqual(1)
    } finally {
      for (const subscriber of subscribers) subscriber.stop()
    }
  }, 600_000)

  it('a worker killed outright is replaced and counted', async () => {
    const before = sum(await scrape(), 'livegate_worker_restarts_total', { reason: 'crashed' })
    const victim = (await readiness()).workers[0]?.pid as number
    process.kill(victim, 'SIGKILL')
    await expect
      .poll(async () => (await readiness()).workers.some((w) => w.pid === victim), { timeout: 60_000, interval: 500 })
      .toBe(false)
    await twoReady()
    expect(sum(await scrape(), 'livegate_worker_restarts_total', { reason: 'crashed' })).toBe(before + 1)
  }, 600_000)

  it('SIGTERM to the primary stops every worker as a gateway stops: every acknowledged callback is stored, and it ' +
    'exits 0', async () => {
    const taskId = `stop-${Date.now()}`
    let acknowledged = 0
    let sending = true
    const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)))
    const flood = (async () => {
      for (let seq = 0; sending; seq++) {
        const status = await post(url, { ...sampleCallbacks(taskId).liveResume, seq: String(seq) } as Record<
          string,
          string
        >).catch(() => 0)
        if (status === 200) acknowledged++
        if (status !== 200 && acknowledged > 0) return
      }
    })()
    await expect.poll(() => acknowledged, { timeout: 60_000 }).toBeGreaterThan(5)
    primary.kill('SIGTERM')
    expect(await exited).toBe(0)
    sending = false
    await flood
    expect(await stored(taskId)).toBeGreaterThanOrEqual(acknowledged)
    expect(output()).toContain('every worker stopped')
  }, 300_000)
})

import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, expect, it } from 'vitest'
import WebSocket from 'ws'
import { signCallback } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { sendOnce } from '../support/http.once.js'
import { type ServeProcess, startServeProcess } from '../support/livegate.process.js'
import { type PrivateCluster, startPrivateCluster } from '../support/postgres.cluster.js'

// PostgreSQL is stopped several times under `livegate serve --workers 2` while callbacks stream
// in and subscribers listen on both workers. A hub that did not resume after its listening
// connection came back kept its subscribers open and deaf: each must get every callback that
// was answered 200, once, every time, without resubscribing.

const SUBSCRIBERS = 6
const OUTAGES = 3
const FOLLOW = 'subscription($t: String!) { notificationReceived(filter: { taskIds: [$t] }) { fields } }'

interface Listener {
  seqs: string[]
  ended: string[]
  dispose(): Promise<void>
}

/** A subscriber that never resubscribes: what it receives is what its first subscription got. */
function listen(url: string, taskId: string): Listener {
  const seqs: string[] = []
  const ended: string[] = []
  const client = createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => {},
  })
  client.on('closed', (event) => void ended.push(`closed ${(event as { code?: number }).code}`))
  client.subscribe<{ notificationReceived: { fields: Record<string, string> } }>(
    { query: FOLLOW, variables: { t: taskId } },
    {
      next: (result) => {
        const seq = result.data?.notificationReceived.fields.seq
        if (seq !== undefined) seqs.push(seq)
      },
      error: (error) => void ended.push(`error ${JSON.stringify(error)}`),
      complete: () => void ended.push('complete'),
    },
  )
  return { seqs, ended, dispose: async () => client.dispose() }
}

describeOnServer('subscribers across PostgreSQL restarts, serve --workers 2', () => {
  let cluster: PrivateCluster
  let serve: ServeProcess
  const readiness = async () =>
    JSON.parse((await sendOnce(`${serve.url}/readyz`, 'GET', {})).text || '{}') as {
      ready?: boolean
      realtime?: { listening: boolean } | null
      workers?: Array<{ ready: boolean; listening: boolean | null }>
    }

  beforeAll(async () => {
    cluster = await startPrivateCluster()
    const dir = mkdtempSync(join(tmpdir(), 'livegate-hub-outage-'))
    const config = join(dir, 'livegate.json')
    writeFileSync(
      config,
      JSON.stringify({
        port: 0,
        services: [{ serviceCode: 'TESTING', secrets: [SECRET] }],
        spool: { dir: join(dir, 'spool') },
      }),
    )
    serve = await startServeProcess(['--config', config, '--workers', '2'], {
      ...process.env,
      DATABASE_URL: cluster.url,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    // A worker's start (tsx compiling, on a busy machine) takes a while: a limit against hanging, not a measure.
    for (const limit = Date.now() + 240_000; ; await new Promise((resolve) => setTimeout(resolve, 500))) {
      if (
        (await readiness().catch(() => ({}) as Awaited<ReturnType<typeof readiness>>)).workers?.filter(
          (worker) => worker.ready,
        ).length === 2
      )
        break
      if (Date.now() > limit) throw new Error(`two workers were not ready within 240 s: ${serve.output()}`)
    }
  }, 600_000)

  afterAll(async () => {
    serve?.process.kill('SIGKILL')
    await cluster?.destroy()
  })

  it('every subscriber gets every callback answered 200, once, through every outage; /readyz says when a hub cannot ' +
    'listen', async () => {
    const taskId = `hub-outage-${Date.now()}`
    const listeners = Array.from({ length: SUBSCRIBERS }, () => listen(serve.url, taskId))
    const answered: string[] = []
    let seq = 0
    const post = async () => {
      const fields = { ...(sampleCallbacks(taskId).liveResume as Record<string, string>), seq: String(seq++) }
      const signed = signCallback(fields, {
        url: `${serve.url}/callbacks`,
        method: 'POST',
        secret: SECRET,
        headerPrefix: 'svc',
        nowMs: Date.now(),
      })
      if ((await sendOnce(signed.url, 'POST', signed.headers, signed.body)).status === 200)
        answered.push(fields.seq as string)
    }
    const stream = async (count: number) => {
      for (let i = 0; i < count; i++) await post()
    }
    // Every subscription is in place once each has a callback; what came before is not theirs.
    await expect
      .poll(
        async () => {
          await post()
          return listeners.every((listener) => listener.seqs.length > 0)
        },
        { timeout: 60_000, interval: 300 },
      )
      .toBe(true)
    const from = answered.length
    const expected = () => answered.slice(from)
    const everyoneHasAll = () => listeners.every((listener) => expected().every((s) => listener.seqs.includes(s)))

    for (let outage = 0; outage < OUTAGES; outage++) {
      await stream(5)
      await cluster.stop()
      await stream(10)
      await expect.poll(async () => (await readiness()).ready, { timeout: 60_000 }).toBe(false)
      await new Promise((resolve) => setTimeout(resolve, 2000))
      await cluster.start()
      await stream(10)
      await expect.poll(everyoneHasAll, { timeout: 90_000, interval: 250 }).toBe(true)
      const report = await readiness()
      await expect.poll(async () => (await readiness()).ready, { timeout: 60_000 }).toBe(true)
      expect(report.realtime === null || typeof report.realtime?.listening === 'boolean').toBe(true)
    }

    expect(answered.length).toBeGreaterThan(OUTAGES * 25)
    for (const listener of listeners) {
      expect(listener.ended).toEqual([])
      // Once each: no callback twice, whatever the spool replayed and the hub read again.
      expect(new Set(listener.seqs).size).toBe(listener.seqs.length)
      expect(listener.seqs).toEqual(expect.arrayContaining(expected()))
    }
    expect((await readiness()).realtime).toEqual({ listening: true })
    await Promise.all(listeners.map((listener) => listener.dispose()))
  }, 600_000)
})

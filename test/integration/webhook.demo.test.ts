import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { freePort } from '../support/free.port.js'
import { LIVEGATE_COMMAND, ROOT } from '../support/livegate.process.js'

// `livegate demo` (at the burst pace: events within seconds) sends its events to a receiver it starts itself, which
// verifies every signature.
describe('livegate demo and its webhook receiver', () => {
  it('prints where to see the webhooks, and they arrive verified', async () => {
    const simulatorPort = await freePort()
    const demo = spawn(
      process.execPath,
      [
        ...LIVEGATE_COMMAND,
        'demo',
        '--port',
        '0',
        '--simulator-port',
        String(simulatorPort),
        '--rate',
        '20',
        '--profile',
        'burst',
      ],
      {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: 'warn' },
      },
    )
    let printed = ''
    demo.stdout?.on('data', (chunk: Buffer) => (printed += chunk))
    demo.stderr?.on('data', (chunk: Buffer) => (printed += chunk))
    try {
      // A limit against a hang: on a busy machine the demo itself takes long to start.
      await expect
        .poll(() => /see what it got .* at (http:\/\/\S+)/.exec(printed)?.[1], { timeout: 240_000, interval: 250 })
        .toBeDefined()
      const reportUrl = /see what it got .* at (http:\/\/\S+)/.exec(printed)?.[1] as string
      type Delivery = {
        id: string
        type: string
        payload: { type: string; timestamp: string; data: Record<string, unknown> }
      }
      const report = async () =>
        (await (await fetch(reportUrl)).json()) as {
          verified: number
          refused: number
          byType: Record<string, number>
          latest: Delivery[]
        }
      await expect
        .poll(async () => (await report()).byType['task.started'] ?? 0, { timeout: 120_000, interval: 500 })
        .toBeGreaterThan(0)
      await expect
        .poll(async () => (await report()).byType['callback.live_start'] ?? 0, { timeout: 120_000, interval: 500 })
        .toBeGreaterThan(0)
      const seen = await report()
      expect(seen.refused).toBe(0)
      // Each delivery shows its payload as sent, not only a count.
      const started = seen.latest.find((delivery) => delivery.type === 'task.started')
      expect(started?.payload).toMatchObject({ type: 'task.started', data: { serviceCode: 'DEMO', status: 'LIVE' } })
      expect(typeof started?.payload.timestamp).toBe('string')
      const exited = once(demo, 'exit')
      demo.kill('SIGTERM')
      expect((await exited)[0], printed).toBe(0)
    } finally {
      demo.kill('SIGKILL')
    }
  }, 300_000)
})

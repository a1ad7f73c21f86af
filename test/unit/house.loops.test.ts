import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// One lifecycle, held to the code as house.floors holds the floors: every loop of livegate runs on
// the one scheduler (src/work/wake.scheduler.ts: wake and run again, backoff with jitter, the
// retry pause). A timer, a sleep or a hand-written retry loop anywhere else fails here, unless it
// is on the short list below, each with why it is not a loop.

const SRC = fileURLToPath(new URL('../../src', import.meta.url))
const SCHEDULER = 'work/wake.scheduler.ts'

// Not livegate's process: browser modules served as files, and the simulator that plays the cloud.
const OUTSIDE = [
  'adapters/http/dashboard/',
  'adapters/http/playground/',
  'adapters/http/signin/',
  'adapters/http/taskpage/',
  'simulator/',
]

/** Timers that are not loops: file → how many, and why. */
const ALLOWED: Record<string, { count: number; why: string }> = {
  'work/outbound/webhook.sender.ts': { count: 1, why: 'one attempt’s time limit, cleared with its answer' },
  'work/channel.listener.ts': { count: 1, why: 'one LISTEN’s time limit' },
  'adapters/ops/cluster.link.ts': { count: 1, why: 'one ask of the primary’s time limit' },
  'adapters/ops/readiness.probe.ts': { count: 1, why: 'one probe’s time limit' },
  'work/replica.router.ts': { count: 1, why: 'one replica probe’s time limit' },
  'adapters/cli/serve.cluster.ts': {
    count: 2,
    why: 'a gather’s time limit, and one new worker per exit after the one backoff (backoffMs)',
  },
  'work/realtime/realtime.engine.ts': {
    count: 1,
    why: 'the engine’s next turn: its receive chain yields one before it hands out, a long hand-out one between parts',
  },
  'adapters/websocket/ws.server.ts': {
    count: 1,
    why: 'a socket’s token’s time limit: closed 4401 when it expires, cleared when the socket closes first',
  },
}

const TIMER = /\b(setInterval|setTimeout|setImmediate)\s*\(/g
// A loop that waits and goes round again: `for (;;)` or `while (…)` whose body awaits a sleep.
const RETRY_LOOP =
  /(?:for\s*\(\s*;\s*;\s*\)|while\s*\([^)]*\))\s*\{(?:(?!\n {0,4}\}).)*?await\s+[\w.]*(?:sleep|pause|delay)\s*\(/s

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.ts$/.test(name) ? [relative(SRC, path)] : []
  })
}

const files = sources(SRC).filter((file) => file !== SCHEDULER && !OUTSIDE.some((dir) => file.startsWith(dir)))
const textOf = (file: string) => readFileSync(join(SRC, file), 'utf8')

describe('the one lifecycle', () => {
  it('has no timer outside the scheduler but the time limits on the list, each with its reason', () => {
    const found: Record<string, number> = {}
    for (const file of files) {
      const count = [...textOf(file).matchAll(TIMER)].length
      if (count > 0) found[file] = count
    }
    const allowed = Object.fromEntries(Object.entries(ALLOWED).map(([file, { count }]) => [file, count]))
    expect(found).toEqual(allowed)
    for (const { why } of Object.values(ALLOWED)) expect(why.length).toBeGreaterThan(10)
  })

  it('has no setInterval at all outside the scheduler', () => {
    expect(files.filter((file) => /\bsetInterval\s*\(/.test(textOf(file)))).toEqual([])
  })

  it('has no hand-written retry loop (a loop that sleeps) outside the scheduler', () => {
    const loops = files.filter((file) => RETRY_LOOP.test(textOf(file)))
    expect(loops).toEqual([])
  })

  it('catches what it looks for (the patterns match a timer, a sleep and a retry loop)', () => {
    expect('const t = setInterval(() => tick(), 5000)'.match(TIMER)).toHaveLength(1)
    expect('await new Promise((resolve) => setTimeout(resolve, 250))'.match(TIMER)).toHaveLength(1)
    const loop =
      'while (!this.stopped) {\n      try {\n        await this.drain()\n      } catch {\n        await this.sleep(delay)\n      }\n    }'
    expect(RETRY_LOOP.test(loop)).toBe(true)
    expect(RETRY_LOOP.test('for (;;) {\n  await pause(20)\n}')).toBe(true)
  })
})

import { describe, expect, it } from 'vitest'
import { type GatewayParts, partUnits, startParts, stopParts } from '../../src/gateway.parts.js'

// The one ordered list of a gateway's units of work: every part with a life is on it, started
// forwards and stopped in the reverse (no second list kept by hand).

// Whether each part starts or stops; a part added to GatewayParts must be named here (typecheck).
const LIFECYCLE = {
  metrics: false,
  store: false,
  spool: true,
  cloud: true,
  channels: true,
  replayer: true,
  history: false,
  poller: true,
  archive: true,
  missing: true,
  projector: true,
  hub: true,
  actions: true,
  webhooks: true,
  incidents: true,
  retention: true,
  reads: true,
} satisfies Record<keyof GatewayParts, boolean>

/** Parts that only record what is done to them, by name; `close` is a stop. */
function recordingParts(calls: string[]): GatewayParts {
  const part = (name: string) => ({
    start: async () => void calls.push(`start ${name}`),
    stop: async () => void calls.push(`stop ${name}`),
    close: async () => void calls.push(`stop ${name}`),
    enabled: true,
  })
  return new Proxy({} as GatewayParts, { get: (_target, name) => part(String(name)) })
}

describe('the parts of a gateway', () => {
  it('are one list holding every part with a life, each once', () => {
    const names = partUnits(recordingParts([])).map((unit) => unit.name)
    const alive = Object.entries(LIFECYCLE)
      .filter(([, lives]) => lives)
      .map(([name]) => name)
    expect(new Set(names).size).toBe(names.length)
    expect([...names].sort()).toEqual(alive.sort())
  })

  it('start in the list order and stop in its exact reverse, the spool closed last', async () => {
    const calls: string[] = []
    const parts = recordingParts(calls)
    const names = partUnits(parts).map((unit) => unit.name)
    await startParts(parts)
    const starts = calls.splice(0)
    await stopParts(parts)
    const order = (prefix: string, list: string[]) =>
      list.filter((call) => call.startsWith(prefix)).map((call) => call.slice(prefix.length))
    expect(order('start ', starts)).toEqual(names.filter((name) => name !== 'spool' && name !== 'cloud'))
    expect(order('stop ', calls)).toEqual([...names].reverse())
    expect(calls.at(-1)).toBe('stop spool')
  })
})

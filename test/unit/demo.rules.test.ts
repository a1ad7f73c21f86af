import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { DEMO_RULES } from '../../src/adapters/cli/demo.command.js'
import { loadConfig } from '../../src/config/index.js'
import { roundSeed } from '../../src/model/seeded.random.js'
import { DEMO_DAY } from '../../src/simulator/scenario.model.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'

// `livegate demo`'s alert rules are those a team would keep, and the guide says which they are: a new user saw
// 12 incidents in 5 minutes, most of them INFO "viewers 0 below 3 for 10 s" of tasks whose audience was ramping up.
const guide = readFileSync(new URL('../../docs/getting-started.md', import.meta.url), 'utf8')

describe("the demo's alert rules", () => {
  it('open an incident only for what someone should look at: no audience rule, nothing at INFO', () => {
    expect(DEMO_RULES.length).toBeGreaterThan(0)
    for (const rule of DEMO_RULES) {
      expect(rule.severity, rule.name).not.toBe('INFO')
      expect(rule.when, rule.name).not.toMatch(/viewers/)
    }
  })

  it("open a handful in a round of the day: its stalls that outlast the starving rule's `for`", () => {
    const starving = DEMO_RULES.find((rule) => rule.when === 'task.health')
    const day = generateScenario({
      seed: roundSeed(1, 0),
      sessions: 24,
      serviceCodes: ['DEMO'],
      rate: 4,
      epochMs: 0,
      audience: true,
      day: DEMO_DAY,
    })
    const stalls = day.sessions.filter(
      (session) =>
        session.audience?.stall &&
        session.audience.stall.untilMs - session.audience.stall.fromMs > (starving?.for ?? 0),
    )
    expect(stalls.length).toBeGreaterThan(0)
    expect(stalls.length).toBeLessThanOrEqual(4)
  })

  it('are the rules docs/getting-started.md lists, each with its severity', () => {
    const section = guide.slice(guide.indexOf("### The demo's alert rules"))
    const rows = [...section.matchAll(/^\| `([\w-]+)` \| `([\w.]+)`[^|]*\| (\w+) \|/gm)].map((match) => ({
      name: match[1],
      when: match[2],
      severity: match[3],
    }))
    expect(rows).toEqual(DEMO_RULES.map(({ name, when, severity }) => ({ name, when, severity })))
  })

  it("are the guide's file example, read as a file is", () => {
    const section = guide.slice(guide.indexOf("### The demo's alert rules"))
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1] ?? '{}'
    expect(loadConfig({ value: JSON.parse(example), env: {} }).alerts.rules).toEqual(DEMO_RULES)
  })
})

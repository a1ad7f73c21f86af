import type { ScenarioCallback, ScenarioSession, SessionAudience } from './scenario.model.js'

// Which sessions (by their place in the scenario, every eight) have which mishap.
const STALLS = 2
const RESETS = 3
const FORGETS_START = 4
const THIN = 5

/**
 * Gives each session an audience that rises and falls (every fourth in the thousands) and the
 * cloud's mishaps, chosen by place so a scenario of six sessions or more shows each: a stalled
 * input (the input delivers nothing for the middle of its life), a counter reset (half way), a
 * session whose type 0 callbacks the cloud never sends, and a starving input (a trickle of its
 * rate for the middle of its life); with `swayPeriodMs` (the demo's day),
 * inputs whose bitrate sways. Draws nothing from the seed's random
 * stream, so task ids and every other event stay what the seed alone gives.
 */
export function withAudiences(
  sessions: ScenarioSession[],
  callbacks: ScenarioCallback[],
  swayPeriodMs?: number,
): { sessions: ScenarioSession[]; callbacks: ScenarioCallback[] } {
  const forgotten = new Set<string>()
  const planned = sessions.map((session, index): ScenarioSession => {
    const life = session.listedUntilMs - session.liveFromMs
    const at = (share: number) => session.liveFromMs + Math.round(life * share)
    const audience: SessionAudience = {
      // 1,000 to 4,999 for the big ones, from the task id so it is the seed's.
      peak: index % 4 === 1 ? 1000 + (hash(session.taskId) % 4000) : Math.max(1, session.viewers),
      stall: index % 8 === STALLS ? { fromMs: at(0.25), untilMs: at(0.65) } : null,
      thin: index % 8 === THIN ? { fromMs: at(0.3), untilMs: at(0.7) } : null,
      resetAtMs: index % 8 === RESETS ? at(0.5) : null,
      forgetsStart: index % 8 === FORGETS_START,
      // Each input a little off the others' beat, so the sparklines do not move in step.
      ...(swayPeriodMs ? { swayPeriodMs: Math.round(swayPeriodMs * (0.7 + (hash(session.taskId) % 60) / 100)) } : {}),
    }
    if (audience.forgetsStart) forgotten.add(session.taskId)
    return { ...session, audience }
  })
  return {
    sessions: planned,
    callbacks: callbacks.filter((callback) => !(callback.type === 0 && forgotten.has(callback.taskId))),
  }
}

function hash(text: string): number {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return h >>> 0
}

/** A task's health, as the GraphQL `HealthState`. */
export type HealthState = 'HEALTHY' | 'STARVING' | 'RECONNECTING' | 'ENDED' | 'UNKNOWN'

/** What the samples alone say of a listed task. */
export type SampledHealth = 'HEALTHY' | 'STARVING'

/** Where a task's sampled health stands after its latest sample. */
export interface HealthTrack {
  health: SampledHealth
  /** When `health` began. */
  since: number
  /** Samples in a row whose input bytes equal the one before. */
  stillSamples: number
  inputBytes: number | null
  /** When the latest sample was taken (a task's stored row has it). */
  at?: number
}

/**
 * The sampled health after one more sample of a listed task. STARVING once its input bytes are
 * the same in two consecutive samples; HEALTHY again as soon as they grow (or restart: a counter
 * that went down means the input is being fed again). A sample without input bytes says
 * nothing and keeps the health as it was.
 *
 * A stall is dated from the earlier of the two samples: the input has not grown since then, which
 * is what STARVING says, and an alert rule's `for` then counts from when the input stopped as
 * far as the samples can tell, not from one poll later.
 */
export function nextHealth(previous: HealthTrack | undefined, inputBytes: number | null, at: number): HealthTrack {
  if (!previous) return { health: 'HEALTHY', since: at, stillSamples: 0, inputBytes, at }
  if (inputBytes === null || previous.inputBytes === null)
    return { ...previous, inputBytes: inputBytes ?? previous.inputBytes, at }
  const stillSamples = inputBytes === previous.inputBytes ? previous.stillSamples + 1 : 0
  const health: SampledHealth = stillSamples >= 1 ? 'STARVING' : 'HEALTHY'
  if (health === previous.health) return { health, since: previous.since, stillSamples, inputBytes, at }
  return { health, since: health === 'STARVING' ? (previous.at ?? at) : at, stillSamples, inputBytes, at }
}

/** What a task's health is read from. */
export interface HealthFacts {
  status: 'LIVE' | 'WAITING_RECONNECT' | 'ENDED'
  listed: boolean
  endedAt: number | null
  /** The latest type 15 status 0, while waiting. */
  waitingSince: number | null
  /** Its sampled health; undefined before its first sample. */
  sampled: { health: SampledHealth; since: number } | undefined
  /** Whether its code's task_list is stale. */
  stale: boolean
}

/** The health a task shows, with when it began and why. */
export interface TaskHealthView {
  state: HealthState
  since: number | null
  reason: string | null
}

/** A task's health: its life's status first, then what its samples say, while they are fresh. */
export function taskHealth(facts: HealthFacts): TaskHealthView {
  if (facts.status === 'ENDED') return { state: 'ENDED', since: facts.endedAt, reason: 'The task ended.' }
  if (facts.status === 'WAITING_RECONNECT')
    return {
      state: 'RECONNECTING',
      since: facts.waitingSince,
      reason: 'Waiting for the client to reconnect (type 15 status 0).',
    }
  if (!facts.sampled) return { state: 'UNKNOWN', since: null, reason: 'No task list answer has sampled it yet.' }
  if (facts.stale) return { state: 'UNKNOWN', since: null, reason: "Its service code's task list is stale." }
  if (!facts.listed) return { state: 'UNKNOWN', since: null, reason: 'The latest task list answer does not list it.' }
  if (facts.sampled.health === 'STARVING')
    return {
      state: 'STARVING',
      since: facts.sampled.since,
      reason: 'Its input bytes did not grow between the latest samples.',
    }
  return { state: 'HEALTHY', since: facts.sampled.since, reason: null }
}

import { callbackKind } from '../../model/callback.kinds.js'
import { deriveTask } from '../task.derive.js'
import type { TaskState } from '../task.fold.js'
import { foldSamples, type TimelineSample } from './timeline.samples.js'

/**
 * A task's story, pure: what livegate keeps of it (the callbacks as sent, the samples of the
 * task list's answers, the events it derived, incidents, actions, recordings and webhook
 * deliveries) merged into one line, oldest first, each fact marked with where it came from.
 * Nothing here is stored: the line is rebuilt from those rows on every read.
 */

/** What an entry is about (the names are the schema's `TimelineKind`). */
export type TimelineKind =
  | 'CALLBACK'
  | 'RECONNECT'
  | 'LISTED'
  | 'AUDIENCE'
  | 'STATUS'
  | 'HEALTH'
  | 'CALLBACK_MISSING'
  | 'INCIDENT'
  | 'ACTION'
  | 'RECORDING'
  | 'WEBHOOK'

/** Where a fact came from: a callback, a list's answer, livegate's own conclusion, or something done. */
export type TimelineSource = 'PUSHED' | 'POLLED' | 'INFERRED' | 'DONE'

/** The node behind an entry, by its global id's type and key parts. */
export interface TimelineSubject {
  type: 'Notification' | 'Incident' | 'Action' | 'Recording'
  key: string[]
}

/** One entry of the line. `key` orders entries of the same instant and, with `at`, is its cursor. */
export interface TimelineEntry {
  at: number
  key: string
  kind: TimelineKind
  source: TimelineSource
  summary: string
  subject: TimelineSubject | null
}

/** The rows the line is made of, as storage reads them (times in epoch milliseconds). */
export interface TimelineFacts {
  serviceCode: string
  /** The task's folded state: its start and end when no derived event tells them (webhooks off). */
  task: TaskState | null
  callbacks: Array<{ id: number; type: number; at: number; status: number | null; fileName: string | null }>
  samples: TimelineSample[]
  events: Array<{ id: number; type: string; at: number; facts: Record<string, unknown> }>
  incidents: Array<{
    id: number
    rule: string
    severity: string
    summary: string
    openedAt: number
    acknowledgedAt: number | null
    acknowledgedBy: string | null
    resolvedAt: number | null
    resolution: string | null
  }>
  actions: Array<{
    id: number
    kind: string
    state: string
    requestedAt: number
    finishedAt: number | null
    requestedBy: string | null
    refusal: string | null
    ret: number | null
    message: string | null
  }>
  recordings: Array<{ id: number; fileName: string; fromCallback: boolean; fromList: boolean; firstSeenAt: number }>
  deliveries: Array<{
    id: number
    endpoint: string
    eventType: string
    status: string
    attempts: number
    lastStatusCode: number | null
    /** When it was put in line: where it stays on the line, whatever becomes of it. */
    at: number
    finishedAt: number | null
  }>
}

// A key sorts as text: a letter per source table, then the row id zero-padded.
const keyOf = (letter: string, id: number, suffix = '') => `${letter}${String(id).padStart(16, '0')}${suffix}`

const REASONS: Record<string, string> = {
  cleared: 'its condition cleared',
  'task-ended': 'its task ended',
  'rule-removed': 'its rule is gone',
}

function callbackEntry(row: TimelineFacts['callbacks'][number], serviceCode: string): TimelineEntry {
  const kind = callbackKind(row.type)
  const base = { at: row.at, key: keyOf('c', row.id), source: 'PUSHED' as const }
  const notification: TimelineSubject = { type: 'Notification', key: [String(row.id)] }
  if (kind === 'LIVE_RESUME') {
    const what = row.status === 1 ? 'its client reconnected: the live resumed' : 'waits for its client to reconnect'
    return { ...base, kind: 'RECONNECT', summary: `LIVE_RESUME: ${what}`, subject: notification }
  }
  if (kind === 'ARCHIVED' && row.fileName !== null)
    return {
      ...base,
      kind: 'RECORDING',
      summary: `ARCHIVED: the recording ${row.fileName} is ready`,
      subject: { type: 'Recording', key: [serviceCode, row.fileName] },
    }
  return { ...base, kind: 'CALLBACK', summary: `${kind} (type ${row.type})`, subject: notification }
}

// Which channel said a task started or ended: the callback of its kind, when one came before.
function statusSource(facts: TimelineRecord, type: number, at: number): TimelineSource {
  return facts.callbacks.some((row) => row.type === type && row.at <= at) ? 'PUSHED' : 'POLLED'
}

function eventEntry(row: TimelineFacts['events'][number], facts: TimelineRecord): TimelineEntry | undefined {
  const base = { at: row.at, key: keyOf('e', row.id), subject: null }
  const said = (name: string) => (typeof row.facts[name] === 'string' ? (row.facts[name] as string) : '')
  switch (row.type) {
    case 'task.started':
      return { ...base, kind: 'STATUS', source: statusSource(facts, 0, row.at), summary: 'status LIVE: started' }
    case 'task.ended': {
      const reason = said('endReason')
      // VANISHED: it left the task list and no type 1 ever came; the end is livegate's conclusion.
      const source = reason === 'VANISHED' ? 'INFERRED' : statusSource(facts, 1, row.at)
      return { ...base, kind: 'STATUS', source, summary: `status ENDED${reason ? ` (${reason})` : ''}` }
    }
    case 'task.health_changed':
      return {
        ...base,
        kind: 'HEALTH',
        source: 'INFERRED',
        summary: `health ${said('from')} → ${said('to')}: ${said('reason')}`,
      }
    case 'task.callback_missing':
      return {
        ...base,
        kind: 'CALLBACK_MISSING',
        source: 'INFERRED',
        summary: `no ${said('kind')} callback: ${said('reason')}`,
      }
    case 'recording.missing':
      return { ...base, kind: 'RECORDING', source: 'INFERRED', summary: `recording missing: ${said('reason')}` }
    default:
      return undefined
  }
}

function incidentEntries(row: TimelineFacts['incidents'][number]): TimelineEntry[] {
  const subject: TimelineSubject = { type: 'Incident', key: [String(row.id)] }
  const entry = (at: number, step: string, source: TimelineSource, summary: string): TimelineEntry => ({
    at,
    key: keyOf('i', row.id, step),
    kind: 'INCIDENT',
    source,
    summary,
    subject,
  })
  const entries = [
    entry(row.openedAt, 'a', 'INFERRED', `incident opened (${row.severity}, ${row.rule}): ${row.summary}`),
  ]
  if (row.acknowledgedAt !== null)
    entries.push(
      entry(row.acknowledgedAt, 'b', 'DONE', `incident acknowledged by ${row.acknowledgedBy ?? 'the local user'}`),
    )
  if (row.resolvedAt !== null) {
    const why = REASONS[row.resolution ?? ''] ?? row.resolution ?? 'resolved'
    entries.push(entry(row.resolvedAt, 'c', 'INFERRED', `incident resolved: ${why}`))
  }
  return entries
}

function actionEntries(row: TimelineFacts['actions'][number]): TimelineEntry[] {
  const subject: TimelineSubject = { type: 'Action', key: [String(row.id)] }
  const what = row.kind === 'STOP_TASK' ? 'stop' : row.kind === 'SEND_MESSAGE' ? 'message' : row.kind
  const by = row.requestedBy ?? 'the local user'
  const base = { kind: 'ACTION' as const, source: 'DONE' as const, subject }
  if (row.state === 'REFUSED')
    return [
      {
        ...base,
        at: row.requestedAt,
        key: keyOf('a', row.id, 'a'),
        summary: `${what} asked by ${by}, refused (${row.refusal ?? ''})`,
      },
    ]
  const entries: TimelineEntry[] = [
    { ...base, at: row.requestedAt, key: keyOf('a', row.id, 'a'), summary: `${what} asked by ${by}` },
  ]
  if (row.finishedAt !== null) {
    const answer =
      row.ret === null ? '' : `: the cloud answered ret ${row.ret}${row.message ? ` (${row.message})` : ''}`
    entries.push({
      ...base,
      at: row.finishedAt,
      key: keyOf('a', row.id, 'b'),
      summary: `${what} ${row.state}${answer}`,
    })
  }
  return entries
}

function deliveryEntry(row: TimelineFacts['deliveries'][number]): TimelineEntry {
  const tries = `${row.attempts} attempt${row.attempts === 1 ? '' : 's'}`
  const code = row.lastStatusCode === null ? '' : `, HTTP ${row.lastStatusCode}`
  const when = row.finishedAt === null ? '' : ` at ${new Date(row.finishedAt).toISOString().slice(11, 19)} UTC`
  const outcome =
    row.status === 'DELIVERED'
      ? `delivered to ${row.endpoint}${when} (${tries}${code})`
      : row.status === 'DEAD'
        ? `a dead letter for ${row.endpoint}${when} (${tries}${code})`
        : `in line for ${row.endpoint} (${tries} so far${code})`
  return {
    at: row.at,
    key: keyOf('w', row.id),
    kind: 'WEBHOOK',
    source: 'DONE',
    summary: `${row.eventType} ${outcome}`,
    subject: null,
  }
}

/**
 * The task's start and end as its state says them. Derived events (`task.started`, `task.ended`)
 * are written only while a webhook endpoint is configured; without them the state still knows
 * when the task started and ended, if not every start of a task started again.
 */
function stateEntries(facts: TimelineRecord): TimelineEntry[] {
  if (facts.task === null) return []
  const told = (type: string) => facts.events.some((row) => row.type === type)
  const task = deriveTask(facts.task)
  const sent = (type: number): TimelineSource =>
    facts.callbacks.some((row) => row.type === type) ? 'PUSHED' : 'POLLED'
  const entries: TimelineEntry[] = []
  const base = { kind: 'STATUS' as const, subject: null }
  if (task.startedAt && !told('task.started'))
    entries.push({
      ...base,
      at: task.startedAt.getTime(),
      key: keyOf('s', 0, 'a'),
      source: sent(0),
      summary: 'status LIVE: started',
    })
  if (task.endedAt && !told('task.ended')) {
    const reason = task.endReason ?? ''
    entries.push({
      ...base,
      at: task.endedAt.getTime(),
      key: keyOf('s', 0, 'b'),
      source: reason === 'VANISHED' ? 'INFERRED' : sent(1),
      summary: `status ENDED${reason ? ` (${reason})` : ''}`,
    })
  }
  return entries
}

/** What a task's line is made of but its samples (read a chunk at a time: `timeline.page.ts`). */
export type TimelineRecord = Omit<TimelineFacts, 'samples'>

/** Every entry of a task's line but those of its samples, oldest first (ties by key). */
export function factEntries(facts: TimelineRecord): TimelineEntry[] {
  const entries: TimelineEntry[] = stateEntries(facts)
  for (const row of facts.callbacks) entries.push(callbackEntry(row, facts.serviceCode))
  for (const row of facts.events) {
    const entry = eventEntry(row, facts)
    if (entry) entries.push(entry)
  }
  for (const row of facts.incidents) entries.push(...incidentEntries(row))
  for (const row of facts.actions) entries.push(...actionEntries(row))
  // A file the callback told is its ARCHIVED entry already; one only the archive listed is the list's.
  for (const row of facts.recordings)
    if (row.fromList && !row.fromCallback)
      entries.push({
        at: row.firstSeenAt,
        key: keyOf('r', row.id),
        kind: 'RECORDING',
        source: 'POLLED',
        summary: `recording ${row.fileName} listed by the archive`,
        subject: { type: 'Recording', key: [facts.serviceCode, row.fileName] },
      })
  for (const row of facts.deliveries) entries.push(deliveryEntry(row))
  return entries.sort(compareEntries)
}

/** Every entry of a task's line, oldest first (ties by key). */
export function foldTimeline(facts: TimelineFacts): TimelineEntry[] {
  const samples = foldSamples(facts.samples).map((entry) => ({ ...entry, subject: null }))
  return [...factEntries(facts), ...samples].sort(compareEntries)
}

/** The line's order: time, then key. */
export function compareEntries(a: Pick<TimelineEntry, 'at' | 'key'>, b: Pick<TimelineEntry, 'at' | 'key'>): number {
  return a.at - b.at || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
}

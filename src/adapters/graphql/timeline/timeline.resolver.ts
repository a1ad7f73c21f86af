import { compareEntries, type TimelineEntry as Entry } from '../../../fold/timeline/timeline.fold.js'
import { type LinePlace, TimelinePager } from '../../../fold/timeline/timeline.page.js'
import { timelineFacts, timelineSamples } from '../../../storage/graph/timeline.queries.js'
import type { Db } from '../../../storage/database.client.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import {
  type ConnectionData,
  type CursorCodec,
  cursorCodec,
  PAGE_ARGUMENTS,
  pageWindow,
  toConnection,
} from '../connection.pagination.js'
import { isStorableTime } from '../graphql.errors.js'
import { loadNode, type NodeValue } from '../reads/node.view.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { Arg, Ctx, FieldResolver, Int, Resolver, Root } from '../type-graphql.shim.js'
import { Node } from '../types/node.type.js'
import { Task } from '../types/task.type.js'
import { TimelineEntry, TimelineEntryConnection, TimelineKind } from '../types/timeline.type.js'

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS

/** An entry as GraphQL reads it: its time as a Date, its subject resolved when asked. */
export type TimelineEntryValue = Omit<Entry, 'at'> & { at: Date; atMs: number }

const KEY_TEXT = /^(\d{1,15}):([a-z]\d{16}[a-c]?)$/

/** An entry's place on the line: its time and key. The subscription resumes after one too. */
export const timelineCursor: CursorCodec<{ at: number; key: string }> = cursorCodec('tl1', {
  toText: (place) => `${place.at}:${place.key}`,
  fromText: (text) => {
    const match = KEY_TEXT.exec(text)
    if (!match) return undefined
    const at = Number(match[1])
    return isStorableTime(at) ? { at, key: match[2] as string } : undefined
  },
})

// The first chunk of answers a page reads (an hour at one answer each 5 s fits), doubled each next one.
const FIRST_CHUNK = 1024

/**
 * Up to `fetch` entries of a task's line after a place, oldest first, of the kinds asked (all when
 * none are named). The answers are read in time order a chunk at a time and folded until they
 * settle the page, so the first page of a day's task reads its answers only as far as it reaches.
 */
export async function timelinePage(
  db: Db,
  task: Pick<TaskView, 'serviceCode' | 'id'>,
  ask: { after?: LinePlace | undefined; fetch: number; kinds?: readonly string[] | null | undefined },
): Promise<TimelineEntryValue[]> {
  const { peak, ...record } = await timelineFacts(db, task.serviceCode, task.id)
  const kinds = ask.kinds && ask.kinds.length > 0 ? new Set(ask.kinds) : undefined
  const pager = new TimelinePager(record, peak, { after: ask.after, fetch: ask.fetch, kinds })
  let from: number | undefined
  let chunk = FIRST_CHUNK
  let page = pager.page()
  while (page === undefined && pager.needsSamples) {
    const samples = await timelineSamples(db, task.serviceCode, task.id, from, chunk)
    if (samples.length < chunk) {
      pager.push(samples)
      pager.finish()
    } else {
      // The next chunk starts at the last answer's millisecond, so answers of one instant are never split.
      const last = (samples.at(-1) as { at: number }).at
      const whole = samples.filter((sample) => sample.at < last)
      if (whole.length > 0) from = last
      pager.push(whole)
    }
    chunk *= 2
    page = pager.page()
  }
  return (page ?? []).map((entry) => ({ ...entry, at: new Date(entry.at), atMs: entry.at }))
}

/** A task's whole line, oldest first, of the kinds asked (all when none are named). */
export function taskTimeline(
  db: Db,
  task: Pick<TaskView, 'serviceCode' | 'id'>,
  kinds?: readonly string[] | null,
): Promise<TimelineEntryValue[]> {
  return timelinePage(db, task, { fetch: Number.POSITIVE_INFINITY, kinds })
}

/** The entries after a place on the line (all of them without one). */
export function entriesAfter<T extends { atMs: number; key: string }>(
  entries: readonly T[],
  after: { at: number; key: string } | undefined,
): T[] {
  if (after === undefined) return [...entries]
  return entries.filter((entry) => compareEntries({ at: entry.atMs, key: entry.key }, after) > 0)
}

/** `Task.timeline`: reached only through a task the caller may read, so the task's scope is the line's. */
@Resolver(() => Task)
export class TaskTimelineResolver {
  @FieldResolver(() => TimelineEntryConnection, {
    description:
      'Everything livegate knows of this task on one line, oldest first: each callback, the task list answers ' +
      '(those that said nothing new folded into one entry), status and health changes, reconnects, audience ' +
      'peaks and drops, incidents, actions, recordings and webhook deliveries, each with where it came from ' +
      '(docs/querying.md#a-tasks-timeline).',
  })
  async timeline(
    @Root() task: TaskView,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Arg('kinds', () => [TimelineKind], {
      nullable: true,
      description: 'Only entries of these kinds; all when absent.',
    })
    kinds: string[] | null | undefined,
    @Ctx() { db, config }: GraphqlContext,
  ): Promise<ConnectionData<TimelineEntryValue>> {
    const window = pageWindow({ first, after }, config.graphql, timelineCursor)
    const rows = await timelinePage(db, task, { after: window.after, fetch: window.fetch, kinds })
    return toConnection(rows, window, {
      codec: timelineCursor,
      keyOf: (entry) => ({ at: entry.atMs, key: entry.key }),
      toNode: (entry) => entry,
      countAll: async () => (await taskTimeline(db, task, kinds)).length,
    })
  }
}

/** `TimelineEntry.subject`: the node behind an entry, read as `node(id:)` reads it (so within the caller's scope). */
@Resolver(() => TimelineEntry)
export class TimelineEntryResolver {
  @FieldResolver(() => Node, {
    nullable: true,
    description:
      'The node behind the entry: the notification, incident, action or recording; null for a folded run of ' +
      'answers, a derived event and a webhook delivery (none of them is a node).',
  })
  async subject(@Root() entry: TimelineEntryValue, @Ctx() context: GraphqlContext): Promise<NodeValue | null> {
    return entry.subject ? loadNode(context, entry.subject) : null
  }

  @FieldResolver(() => String, {
    description:
      "The entry's place on the line: pass it as `after` to `Task.timeline` or `Subscription.taskTimeline` for " +
      'the entries after it.',
  })
  cursor(@Root() entry: TimelineEntryValue): string {
    return timelineCursor.encode({ at: entry.atMs, key: entry.key })
  }
}

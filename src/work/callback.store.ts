import { inArray, type SQL, sql } from 'drizzle-orm'
import { type NewCallbackRow, callbacks } from '../storage/callback.table.js'
import { type CallbackEvent, callbackEvent } from '../fold/fold.event.js'
import { taskEvents } from '../model/event.codec.js'
import { notifyStatement } from '../storage/notify.statement.js'
import { type Db, resultRows } from '../storage/database.client.js'
import { type FoldScope, foldEvents, foldScope, type GraphChanges, lockStatement, readScope, type ScopeStates, writeChanges } from '../storage/graph.statements.js'
import { GroupCommit, isDataError } from './group.commit.js'
import { upsertJson } from '../storage/json.rows.js'
import { type NewRefusalRow, refusals } from '../storage/refusal.table.js'

/** Where a kept callback landed: its row id and how many times it has been delivered. */
export interface KeptCallback {
  id: number
  deliveries: number
}

// An arbitrary key of livegate's own for the ingest lock ("livegate" in a phone keypad).
const INGEST_LOCK_KEY = 54834283

/** How {@link CallbackStore.keep} treats the row. */
export interface KeepOptions {
  /**
   * The row comes from the spool: if this very delivery already landed (the database committed
   * it but the answer was lost, or a replay was cut short), it is not counted a second time.
   */
  replay?: boolean
}

/** Limits on what the store keeps. */
export interface CallbackStoreOptions {
  /** Rows the refusals table keeps; the oldest beyond it are pruned now and then. */
  refusedMaxRows?: number
  /** The most callbacks one transaction takes. */
  maxBatch?: number
}

interface Keeping {
  row: NewCallbackRow
  replay: boolean
}

/** Writes callbacks and refusals. Every method resolves only once the row is committed. */
export class CallbackStore {
  private readonly refusedMaxRows: number
  private readonly pruneEvery: number
  // Starts due, so a cap lowered since the last run takes effect with the first refusal.
  private refusedSincePrune: number
  private readonly batches: GroupCommit<Keeping, KeptCallback>

  constructor(
    private readonly db: Db,
    options: CallbackStoreOptions = {},
  ) {
    this.refusedMaxRows = options.refusedMaxRows ?? 100_000
    // Pruning now and then rather than per insert: the table overshoots the cap by at most 1%.
    this.pruneEvery = Math.min(1000, Math.max(1, Math.ceil(this.refusedMaxRows / 100)))
    this.refusedSincePrune = this.pruneEvery
    this.batches = new GroupCommit({
      commit: (items) => this.db.transaction((tx) => keepBatch(tx as unknown as Db, items)),
      maxBatch: options.maxBatch ?? 500,
      isItemError: isDataError,
    })
  }

  /**
   * Keeps a callback once: a second delivery of the same callback meets the unique dedupe key
   * and only counts the delivery, in the same statement, so two racing deliveries cannot both
   * insert. Callbacks arriving together share one transaction (group commit); each resolves
   * only once its transaction has committed.
   */
  keep(row: NewCallbackRow, options: KeepOptions = {}): Promise<KeptCallback> {
    return this.batches.submit({ row, replay: options.replay === true })
  }

  /** Records a refused delivery for operators; now and then prunes the oldest beyond the cap. */
  async refuse(row: NewRefusalRow): Promise<void> {
    await this.db.insert(refusals).values(row)
    this.refusedSincePrune += 1
    if (this.refusedSincePrune >= this.pruneEvery) {
      this.refusedSincePrune = 0
      await this.pruneRefusals()
    }
  }

  /** Deletes the oldest refusals beyond the cap; resolves to how many went. */
  async pruneRefusals(): Promise<number> {
    // Ids follow arrival, and the primary key finds the cut without sorting the table.
    const deleted = await this.db
      .delete(refusals)
      .where(sql`${refusals.id} <= (select r.id from ${refusals} r order by r.id desc offset ${this.refusedMaxRows} limit 1)`)
      .returning({ id: refusals.id })
    return deleted.length
  }

  /** Resolves when the database answers a statement; the replayer's test of "is it back". */
  async ping(): Promise<void> {
    await this.db.execute(sql`select 1`)
  }
}

/**
 * One transaction's worth of callbacks: insert them (deliveries of one callback folded into one
 * row), fold the new ones into the graph, and NOTIFY them, all before the commit. Statements
 * that do not wait on each other are sent together, so a batch costs four round trips (BEGIN;
 * locks, insert and state reads; graph writes and NOTIFY; COMMIT) however many callbacks it
 * holds: each round trip of a busy process waits its turn behind the requests queued on its
 * event loop.
 */
async function keepBatch(tx: Db, items: Keeping[]): Promise<KeptCallback[]> {
  const events = items.map(({ row }) => callbackEvent(row))
  const scopes = scopesOf(items, events)
  // One writer at a time, across every instance: row ids are then handed out in commit order,
  // which is what lets a subscriber resume after a cursor without a gap. The entity locks every
  // writer that folds must hold come in the same statement, after it.
  // Sent at once (`then` starts a statement): the statements below queue behind it on the
  // connection, so the lock is taken before anything is read or written, without waiting for it.
  const locked = tx.execute(lockStatement(scopes, INGEST_LOCK_KEY) as SQL).then(() => undefined)
  // Its failure is met where it is awaited; this only keeps an early throw from leaving it unheard.
  locked.catch(() => {})
  const outcomes: Array<KeptCallback | undefined> = new Array(items.length)
  const replays = items.some((item) => item.replay)
  const landed = replays ? (await Promise.all([locked, landedReplays(tx, items)]))[1] : new Map<string, LandedRow>()
  // The same callback twice in one batch must be one row: an upsert cannot touch a row twice.
  const groups = new Map<string, number[]>()
  items.forEach(({ row, replay }, i) => {
    const already = replay ? landed.get(row.dedupeKey) : undefined
    if (already && already.lastDeliveredAt.getTime() === row.lastDeliveredAt.getTime()) {
      outcomes[i] = { id: already.id, deliveries: already.deliveries }
      return
    }
    const group = groups.get(row.dedupeKey)
    if (group) group.push(i)
    else groups.set(row.dedupeKey, [i])
  })
  if (groups.size === 0) {
    await locked
    return outcomes as KeptCallback[]
  }
  const values = [...groups.values()].map((indexes) => {
    const rows = indexes.map((i) => (items[i] as Keeping).row)
    const latest = rows.reduce((a, b) => (b.lastDeliveredAt > a.lastDeliveredAt ? b : a))
    return { ...(rows[0] as NewCallbackRow), lastDeliveredAt: latest.lastDeliveredAt, deliveries: rows.length }
  })
  const [, kept, states] = await Promise.all([
    locked,
    tx.execute(insertStatement(values)).then((result) => resultRows<InsertedRow>(result).map(inserted)),
    Promise.all(scopes.map((scope) => readScope(tx, scope))),
  ])
  const byKey = new Map(kept.map((row) => [row.dedupeKey, row]))
  const fresh: Array<{ id: number; index: number }> = []
  for (const [key, indexes] of groups) {
    const row = byKey.get(key)
    if (!row) throw new Error('insert returned no row')
    // Inserted now exactly when its count is this batch's deliveries; each delivery is numbered.
    const before = row.deliveries - indexes.length
    if (before === 0) fresh.push({ id: row.id, index: indexes[0] as number })
    indexes.forEach((i, n) => {
      outcomes[i] = { id: row.id, deliveries: before + n + 1 }
    })
  }
  // The graph is folded in the same transaction: a callback is never kept but unfolded.
  const writes: Array<Promise<unknown>> = []
  const changedTasks: GraphChanges['tasks'] = []
  scopes.forEach((scope, s) => {
    const own = fresh.filter(({ index }) => (items[index] as Keeping).row.serviceCode === scope.serviceCode)
    const changes = foldEvents(scope, states[s] as ScopeStates, own.map(({ index }) => events[index]).filter((e): e is CallbackEvent => e !== null))
    const now = own.reduce((latest, { index }) => ((items[index] as Keeping).row.receivedAt > latest ? (items[index] as Keeping).row.receivedAt : latest), new Date(0))
    writes.push(writeChanges(tx, changes, now))
    changedTasks.push(...changes.tasks)
  })
  const ids = fresh.map(({ id }) => id).sort((a, b) => a - b)
  const notify = notifyStatement([...ids.map((id) => ({ kind: 'callback' as const, id })), ...taskEvents(changedTasks)])
  if (notify) writes.push(tx.execute(notify))
  await Promise.all(writes)
  return outcomes as KeptCallback[]
}

interface InsertedRow {
  id: number | string
  deliveries: number
  dedupe_key: string
}

// A repeated delivery is counted, and keeps the latest delivery time (a replay may be older).
const COUNT_DELIVERY = sql.raw('"deliveries" = "callbacks"."deliveries" + excluded."deliveries", "last_delivered_at" = greatest("callbacks"."last_delivered_at", excluded."last_delivered_at")')

function insertStatement(values: NewCallbackRow[]): SQL {
  return upsertJson(callbacks, values, { target: [callbacks.dedupeKey.name], set: COUNT_DELIVERY, returning: ['id', 'deliveries', 'dedupe_key'] })
}

function inserted(row: InsertedRow): { id: number; deliveries: number; dedupeKey: string } {
  return { id: Number(row.id), deliveries: Number(row.deliveries), dedupeKey: row.dedupe_key }
}

function scopesOf(items: Keeping[], events: Array<CallbackEvent | null>): FoldScope[] {
  const byService = new Map<string, CallbackEvent[]>()
  items.forEach(({ row }, i) => {
    const event = events[i]
    if (!event) return
    const list = byService.get(row.serviceCode)
    if (list) list.push(event)
    else byService.set(row.serviceCode, [event])
  })
  // Sorted, so the lock statement's order does not depend on arrival.
  return [...byService.keys()].sort().map((serviceCode) => foldScope(serviceCode, byService.get(serviceCode) as CallbackEvent[]))
}

interface LandedRow {
  id: number
  deliveries: number
  lastDeliveredAt: Date
}

async function landedReplays(tx: Db, items: Keeping[]): Promise<Map<string, LandedRow>> {
  const keys = items.filter((item) => item.replay).map((item) => item.row.dedupeKey)
  const rows = await tx
    .select({ id: callbacks.id, deliveries: callbacks.deliveries, lastDeliveredAt: callbacks.lastDeliveredAt, dedupeKey: callbacks.dedupeKey })
    .from(callbacks)
    .where(inArray(callbacks.dedupeKey, keys))
  return new Map(rows.map((row) => [row.dedupeKey, row]))
}

import type { FastifyBaseLogger } from 'fastify'
import { Counter, Gauge, type Registry } from 'prom-client'
import { chooseRead, type ReadChoice, type ReplicaReading, walLocation } from '../fold/replica.choice.js'
import type { Db } from '../storage/database.client.js'
import { readPosition, replayState } from '../storage/replica.queries.js'
import { WakeScheduler } from './wake.scheduler.js'

/** How often each replica is asked how far its replay stands. */
export const REPLICA_PROBE_MS = 500
// One probe's time limit: a replica that does not answer within it is skipped until it does.
const PROBE_TIMEOUT_MS = 2000

/** A replica to read from: its name (host and port, never credentials) and its pool. */
export interface ReadReplica {
  name: string
  db: Db
  /** Closes its pool, when the router stops. */
  close(): Promise<void>
}

/** Where one read was served, for the answer's `extensions` (`readFrom`, `lagMs`). */
export type ReadTarget = ReadChoice & { db: Db }

/** A replica's state for `/readyz`: serving, too far behind, or not answering. */
export interface ReplicaState {
  name: string
  state: 'serving' | 'lagging' | 'down'
  lagMs: number
}

/**
 * Routes reads to streaming replicas (`database.readUrls`) and everything else to the primary. It
 * probes each replica's replay on the one scheduler, and answers each read with the least behind
 * replica that may serve it by the pure rule of fold/replica.choice.ts; with none, the primary.
 */
export class ReplicaRouter {
  private readonly readings: ReplicaReading[]
  private readonly scheduler: WakeScheduler
  private readonly reads: Counter<'target'>
  private readonly lag: Gauge<'replica'>

  constructor(
    private readonly options: {
      primary: Db
      replicas: readonly ReadReplica[]
      maxLagMs: number
      registry: Registry
      log: FastifyBaseLogger
    },
  ) {
    // Not answering until a first probe says otherwise: no read goes to a replica never asked.
    this.readings = options.replicas.map((replica) => ({
      name: replica.name,
      answering: false,
      lagMs: 0,
      replayed: undefined,
    }))
    const registers = [options.registry]
    this.reads = new Counter({
      name: 'livegate_db_reads_total',
      help: 'Reads (GraphQL queries and their loaders) by the database that served them: replica or primary.',
      labelNames: ['target'],
      registers,
    })
    this.lag = new Gauge({
      name: 'livegate_db_replica_lag_ms',
      help: "How far each replica's replay was behind at its last probe, in milliseconds (-1: not answering).",
      labelNames: ['replica'],
      registers,
    })
    this.scheduler = new WakeScheduler({ run: () => this.probe() })
  }

  /** Whether there is any replica to route to. */
  get routing(): boolean {
    return this.readings.length > 0
  }

  /** Probes at once, then every {@link REPLICA_PROBE_MS}. */
  async start(): Promise<void> {
    if (!this.routing) return
    await this.probe()
    this.scheduler.wakeIn(REPLICA_PROBE_MS)
  }

  /** Stops probing and closes the replicas' pools. */
  async stop(): Promise<void> {
    await this.scheduler.stop()
    await Promise.all(this.options.replicas.map((replica) => replica.close()))
  }

  /**
   * The database for a read: a replica that may serve it, else the primary. `atLeast` is the WAL
   * location the read names (`16/B374D848`, a mutation's answer or a cursor's position); text that
   * is no location is taken as the primary's latest (the primary serves it).
   */
  choose(atLeast?: string): ReadTarget {
    const location = atLeast === undefined ? undefined : (walLocation(atLeast) ?? 2n ** 64n)
    const choice = chooseRead(this.readings, this.options.maxLagMs, location)
    this.reads.inc({ target: choice.target })
    if (choice.target === 'primary') return { ...choice, db: this.options.primary }
    const replica = this.options.replicas.find((r) => r.name === choice.name) as ReadReplica
    return { ...choice, db: replica.db }
  }

  /** The primary, counted as a read served there (a mutation and what it answers). */
  primary(): ReadTarget {
    this.reads.inc({ target: 'primary' })
    return { target: 'primary', lagMs: 0, db: this.options.primary }
  }

  /**
   * Where `db` (the primary, or a replica a read was served by) stands now: asked after a read, a
   * position at or past all it saw, which the answer names and a later read names as `readAfter`.
   */
  position(db: Db = this.options.primary): Promise<string> {
    return readPosition(db)
  }

  /** Each replica's state, for `/readyz`. */
  states(): ReplicaState[] {
    return this.readings.map((r) => ({
      name: r.name,
      state: !r.answering ? 'down' : r.lagMs > this.options.maxLagMs ? 'lagging' : 'serving',
      lagMs: r.lagMs,
    }))
  }

  private async probe(): Promise<{ within: number }> {
    await Promise.all(
      this.options.replicas.map(async (replica, index) => {
        const reading = this.readings[index] as ReplicaReading
        const was = this.states()[index]?.state
        try {
          const state = await withinLimit(replayState(replica.db))
          Object.assign(reading, {
            answering: true,
            lagMs: state.lagMs,
            replayed: state.replayed === null ? undefined : walLocation(state.replayed),
          })
          this.lag.set({ replica: replica.name }, state.lagMs)
        } catch {
          Object.assign(reading, { answering: false })
          this.lag.set({ replica: replica.name }, -1)
        }
        const now = this.states()[index]?.state
        if (was !== now) this.options.log.info({ replica: replica.name, state: now }, 'replica state changed')
      }),
    )
    return { within: REPLICA_PROBE_MS }
  }
}

function withinLimit<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the replica did not answer in time')), PROBE_TIMEOUT_MS)
  })
  return Promise.race([work, limit]).finally(() => clearTimeout(timer))
}

/** A replica's name in logs, metrics and `/readyz`: its host and port, never its credentials. */
export function replicaName(url: string): string {
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`
}

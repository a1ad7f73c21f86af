import { PGlite } from '@electric-sql/pglite'
import postgres from 'postgres'
import { Webhook } from 'standardwebhooks'

/** One event as the bare loop is handed it: its id and the body to post. */
export interface BareEvent {
  eventId: string
  body: string
}

/** The bare delivery loop, on its own table in one database, and how to fill and stop it. */
export interface BareLoop {
  /** Puts events in its table, undelivered. */
  fill(events: readonly BareEvent[]): Promise<void>
  /** Delivers everything undelivered to `url`; resolves when the last is marked delivered. */
  drain(url: string, secret: string): Promise<number>
  close(): Promise<void>
}

// Rows read per statement, and attempts in flight at once (livegate's default concurrency).
const BATCH = 256
const CONCURRENCY = 16

const CREATE_TABLE =
  'create table bench_bare_events (id bigserial primary key, event_id text not null, body text not null, ' +
  'delivered_at timestamptz)'

/** How the loop reads, marks and counts rows: the only part that differs between the databases. */
interface Store {
  exec(text: string): Promise<void>
  due(limit: number): Promise<Array<{ id: number; event_id: string; body: string }>>
  mark(ids: number[]): Promise<void>
  insert(events: readonly BareEvent[]): Promise<void>
  end(): Promise<void>
}

/**
 * The ceiling delivery is measured against, sharing none of livegate's code: it reads undelivered
 * events from a table of its own, signs each with the `standardwebhooks` package, posts it over
 * keep-alive with Node's own fetch (undici's global pool), and marks each batch delivered in one statement.
 * No retries, leases, metrics or outcomes: what a delivery must do at the least.
 */
export async function startBareLoop(databaseUrl: string | undefined): Promise<BareLoop> {
  const store = databaseUrl ? await serverStore(databaseUrl) : await pgliteStore()
  await store.exec('drop table if exists bench_bare_events')
  await store.exec(CREATE_TABLE)
  return {
    fill: (events) => store.insert(events),
    async drain(url, secret) {
      const signer = new Webhook(secret)
      let delivered = 0
      for (;;) {
        const rows = await store.due(BATCH)
        if (rows.length === 0) return delivered
        let next = 0
        const worker = async () => {
          while (next < rows.length) {
            const row = rows[next++] as { id: number; event_id: string; body: string }
            const sentAt = new Date()
            const response = await fetch(url, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'webhook-id': row.event_id,
                'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
                'webhook-signature': signer.sign(row.event_id, sentAt, row.body),
              },
              body: row.body,
            })
            await response.body?.cancel()
            if (response.status < 200 || response.status >= 300) throw new Error(`bare loop: HTTP ${response.status}`)
          }
        }
        await Promise.all(Array.from({ length: CONCURRENCY }, worker))
        await store.mark(rows.map((row) => Number(row.id)))
        delivered += rows.length
      }
    },
    async close() {
      await store.exec('drop table if exists bench_bare_events')
      await store.end()
    },
  }
}

async function serverStore(url: string): Promise<Store> {
  const sql = postgres(url, { max: 2, onnotice: () => {} })
  return {
    exec: async (text) => void (await sql.unsafe(text)),
    due: (limit) =>
      sql`select id::float8 as id, event_id, body from bench_bare_events where delivered_at is null order by id limit
        ${limit}`,
    mark: async (ids) =>
      void (await sql`update bench_bare_events set delivered_at = now() where id = any(${ids}::bigint[])`),
    insert: async (events) =>
      void (await sql`insert into bench_bare_events ${sql(
        events.map((event) => ({ event_id: event.eventId, body: event.body })),
        'event_id',
        'body',
      )}`),
    end: () => sql.end(),
  }
}

async function pgliteStore(): Promise<Store> {
  const pg = await PGlite.create()
  return {
    exec: async (text) => void (await pg.exec(text)),
    due: async (limit) =>
      (
        await pg.query<{ id: number; event_id: string; body: string }>(
          'select id::float8 as id, event_id, body from bench_bare_events where delivered_at is null order by id ' +
            'limit $1',
          [limit],
        )
      ).rows,
    mark: async (ids) =>
      void (await pg.query('update bench_bare_events set delivered_at = now() where id = any($1::bigint[])', [ids])),
    insert: async (events) =>
      void (await pg.query(
        `insert into bench_bare_events (event_id, body) select r->>'event_id', r->>'body' from ` +
          `jsonb_array_elements($1::jsonb) as r`,
        [JSON.stringify(events.map((event) => ({ event_id: event.eventId, body: event.body })))],
      )),
    end: () => pg.close(),
  }
}

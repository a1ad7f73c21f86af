import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { PGlite } from '@electric-sql/pglite'
import postgres from 'postgres'

/** The bare ceiling livegate's ingest is measured against, and how to stop it. */
export interface BaselineServer {
  url: string
  /** Rows in `bench_baseline`: must equal the 2xx answers. */
  countRows(): Promise<number>
  close(): Promise<void>
}

// The group-commit window: a batch is written when either fills, as the ceiling was measured.
const BATCH_MS = 2
const BATCH_ROWS = 500

const CREATE_TABLE =
  'create table bench_baseline (id bigserial primary key, dedupe_key text not null unique, fields jsonb not ' +
  'null, body bytea not null, received_at timestamptz not null)'

interface Row {
  dedupe_key: string
  fields: string
  body: Buffer
  received_at: Date
}

/** How a baseline writes one batch and counts and drops its table: the only part that differs. */
interface Store {
  insert(rows: Row[]): Promise<unknown>
  count(): Promise<number>
  end(): Promise<void>
}

/**
 * node:http + postgres.js doing what livegate must do durably (parse the form, derive a dedupe
 * key, insert fields and raw body) with group commit: each answer waits for its batch's commit,
 * so a 200 still means the row is on disk.
 */
export async function startBaseline(databaseUrl: string): Promise<BaselineServer> {
  const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} })
  await sql`drop table if exists bench_baseline`
  await sql.unsafe(CREATE_TABLE)
  return serve(
    {
      // Several batches may be in flight on the pool's connections: a commit's fsync need not stall the next batch.
      insert: (rows) =>
        sql`insert into bench_baseline ${sql(rows, 'dedupe_key', 'fields', 'body', 'received_at')} on conflict
          (dedupe_key) do nothing`,
      async count() {
        const [row] = await sql<{ n: string }[]>`select count(*) as n from bench_baseline`
        return Number(row?.n ?? 0)
      },
      async end() {
        await sql`drop table if exists bench_baseline`
        await sql.end()
      },
    },
    Number.POSITIVE_INFINITY,
  )
}

/**
 * The same server on PGlite in memory, the bar for livegate's embedded mode: PGlite runs in this
 * thread and takes one statement at a time, so one batch is in flight and the next gathers
 * meanwhile. A batch is one multi-row insert from a single jsonb parameter (the body as hex), the
 * cheapest way PGlite's client takes many rows at once.
 */
export async function startPgliteBaseline(): Promise<BaselineServer> {
  const pg = await PGlite.create()
  await pg.exec(CREATE_TABLE)
  return serve(
    {
      insert: (rows) =>
        pg.query(
          `insert into bench_baseline (dedupe_key, fields, body, received_at)
           select r->>'dedupe_key', (r->>'fields')::jsonb, decode(r->>'body', 'hex'), (r->>'received_at')::timestamptz
           from jsonb_array_elements($1::jsonb) as r on conflict (dedupe_key) do nothing`,
          [JSON.stringify(rows.map((row) => ({ ...row, body: row.body.toString('hex') })))],
        ),
      async count() {
        const answer = await pg.query<{ n: number }>('select count(*)::int as n from bench_baseline')
        return answer.rows[0]?.n ?? 0
      },
      end: () => pg.close(),
    },
    1,
  )
}

interface Pending {
  row: Row
  done: (ok: boolean) => void
}

async function serve(store: Store, inFlightLimit: number): Promise<BaselineServer> {
  let batch: Pending[] = []
  let timer: NodeJS.Timeout | undefined
  let inFlight = 0
  const flush = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (batch.length === 0 || inFlight >= inFlightLimit) return
    const taken = batch
    batch = []
    inFlight++
    store
      .insert(taken.map((p) => p.row))
      .then(
        () => taken.forEach((p) => p.done(true)),
        () => taken.forEach((p) => p.done(false)),
      )
      .finally(() => {
        inFlight--
        // What gathered while this batch was written goes next, at once.
        if (batch.length > 0) flush()
      })
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const fields = Object.fromEntries(new URLSearchParams(body.toString('utf8')))
      const timestamp = String(req.headers['svc-timestamp'] ?? '')
      const dedupeKey = createHash('sha256').update(timestamp).update(body).digest('hex')
      batch.push({
        row: { dedupe_key: dedupeKey, fields: JSON.stringify(fields), body, received_at: new Date() },
        done: (ok) => {
          res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
          res.end(ok ? '{"ok":true}' : '{"ok":false}')
        },
      })
      if (batch.length >= BATCH_ROWS) flush()
      else timer ??= setTimeout(flush, BATCH_MS)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    countRows: () => store.count(),
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      flush()
      while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10))
      await store.end()
    },
  }
}

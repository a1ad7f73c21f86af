import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'
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

interface Pending {
  row: { dedupe_key: string; fields: string; body: Buffer; received_at: Date }
  done: (ok: boolean) => void
}

/**
 * node:http + postgres.js doing what livegate must do durably (parse the form, derive a dedupe
 * key, insert fields and raw body) with group commit: each answer waits for its batch's commit,
 * so a 200 still means the row is on disk.
 */
export async function startBaseline(databaseUrl: string): Promise<BaselineServer> {
  const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} })
  await sql`drop table if exists bench_baseline`
  await sql`create table bench_baseline (id bigserial primary key, dedupe_key text not null unique, fields jsonb not null, body bytea not null, received_at timestamptz not null)`

  let batch: Pending[] = []
  let timer: NodeJS.Timeout | undefined
  const flush = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    const taken = batch
    batch = []
    if (taken.length === 0) return
    // Several batches may be in flight on the pool's connections: a commit's fsync need not stall the next batch.
    sql`insert into bench_baseline ${sql(
      taken.map((p) => p.row),
      'dedupe_key',
      'fields',
      'body',
      'received_at',
    )} on conflict (dedupe_key) do nothing`.then(
      () => taken.forEach((p) => p.done(true)),
      () => taken.forEach((p) => p.done(false)),
    )
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
    async countRows() {
      const [row] = await sql<{ n: string }[]>`select count(*) as n from bench_baseline`
      return Number(row?.n ?? 0)
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      flush()
      await sql`drop table if exists bench_baseline`
      await sql.end()
    },
  }
}

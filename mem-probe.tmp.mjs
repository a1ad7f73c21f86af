import { PGlite } from '@electric-sql/pglite'
const opts = JSON.parse(process.argv[2] || '{}')
console.log('defaultStartParams' in PGlite, PGlite.defaultStartParams?.length)
const t = Date.now()
const db = new PGlite(process.argv[3] || undefined, opts)
await db.waitReady
await db.exec('create table t (id serial primary key, x text); insert into t(x) select repeat(\'a\', 100) from generate_series(1,10000)')
const r = await db.query("select current_setting('shared_buffers') sb, current_setting('work_mem') wm, current_setting('maintenance_work_mem') mwm, current_setting('temp_buffers') tb, current_setting('wal_buffers') wb")
console.log(r.rows[0], Date.now() - t, 'ms')
globalThis.gc?.()
await new Promise((r) => setTimeout(r, 3000))
console.log('rss MiB', (process.memoryUsage().rss / 2**20).toFixed(0), 'heap', (process.memoryUsage().heapUsed/2**20).toFixed(0), 'ab', (process.memoryUsage().arrayBuffers/2**20).toFixed(0))
await db.close()

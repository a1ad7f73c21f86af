import { sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config/index.js'
import { CallbackStore } from '../../src/work/ingest/callback.store.js'
import type { Db } from '../../src/storage/database.client.js'
import { applyToGraph, taskListEvidence } from '../../src/work/graph/graph.evidence.js'
import { GraphProjector } from '../../src/work/graph/graph.projector.js'
import type { Database } from '../../src/storage/database.client.js'
import { ingestPolicy, judgeCallback } from '../../src/model/callback.verdict.js'
import { signCallback } from '../../src/model/callback.sign.js'
import type { TaskListAnswer } from '../../src/model/task-list.schema.js'

/** The service code every seeded row belongs to. */
export const SEED_SERVICE_CODE = 'TESTING'
const SECRET = 'bench-secret'
// 2023-11-14: the live starts are spread a minute apart from here.
const FIRST_START_S = 1_700_000_000

const OUTPUTS = [
  { tag: 'flv_hd', container: 'flv', width: 1280, height: 720 },
  { tag: 'hls_hd', container: 'm3u8', width: 1280, height: 720 },
  { tag: 'rtmp_sd', container: 'rtmp', width: 640, height: 360 },
]

function taskIdOf(k: number): string {
  return `bench${k.toString(16).padStart(6, '0')}`
}

/**
 * The callbacks the service sends about task `k` over its life, as a real task gets them: a start
 * per output, three thumbnails, and for the tasks no longer listed (one in four) an end and a
 * recording per output; one task in ten resumed, one user in five disconnected.
 */
function callbacksOf(k: number): Array<Record<string, string>> {
  const id = taskIdOf(k)
  const common = { service_code: SEED_SERVICE_CODE, vs_id: `xvs-${k % 8}`, hashed_id: id }
  const createdAt = String(FIRST_START_S + k * 60)
  const author = `user${k % 200}`
  const ended = k % 4 === 3
  const list: Array<Record<string, string>> = OUTPUTS.map((output, index) => ({
    ...common,
    type: '0',
    author,
    url: `http://xvs-${k % 8}.example/live/${id}_${output.tag}.${output.container}`,
    svod_url: output.container === 'flv' ? `http://xvs-${k % 8}.example/${SEED_SERVICE_CODE}/flv/${id}.flv?live=1` : '',
    size: `${output.width}x${output.height}`,
    created_at: createdAt,
    duration: '0.00',
    format: `${output.container}/libx264/aac`,
    path: `${SEED_SERVICE_CODE}/${output.container}/`,
    ctype: '10',
    cversion: '451',
    is_resume: '0',
    tag: output.tag,
    opaque: `order%3D${k}%26slot%3D${index}`,
    live_only: '0',
  }))
  for (const n of [1, 2, 3]) {
    list.push({
      ...common,
      type: '9',
      path: `${SEED_SERVICE_CODE}/jpg/`,
      file_name: `${id}_${n}.jpg`,
      width: '320',
      height: '180',
      url: `http://img.example/${id}_${n}.jpg`,
    })
  }
  if (k % 10 === 1)
    list.push({ service_code: SEED_SERVICE_CODE, type: '15', username: author, hashed_id: id, status: '0' })
  if (ended) {
    for (const [index, output] of OUTPUTS.entries()) {
      list.push({
        ...common,
        type: '2',
        author,
        size: `${output.width}x${output.height}`,
        created_at: createdAt,
        duration: String(60 + (k % 500)),
        format: 'mp4/libx264/aac',
        path: `${SEED_SERVICE_CODE}/mp4/`,
        file_name: `${id}_${output.tag}.mp4`,
        tag: output.tag,
        output_idx: String(index),
        http_output_bytes: '0',
        input_bytes: String(1_000_000 + k),
        url: `http://vod.example/${id}_${output.tag}.mp4`,
      })
      list.push({
        ...common,
        type: '1',
        created_at: createdAt,
        reach_end: String(k % 2),
        tag: output.tag,
        format: `${output.container}/libx264/aac`,
        output_idx: String(index),
        duration: '61.50',
        http_output_bytes: String(5_000_000 + k),
        input_bytes: String(9_000_000 + k),
      })
    }
  }
  if (k % 5 === 0)
    list.push({
      service_code: SEED_SERVICE_CODE,
      vs_id: common.vs_id,
      type: '8',
      username: author,
      session_duration: String(k),
      disconnect_reason: String(k % 3),
    })
  return list
}

/** A task_list answer listing three tasks in four, each output with a video and an audio stream. */
export function taskListOf(tasks: number): TaskListAnswer {
  const task_list: TaskListAnswer['task_list'] = []
  for (let k = 0; k < tasks; k++) {
    if (k % 4 === 3) continue
    const id = taskIdOf(k)
    task_list.push({
      id,
      vs_id: `xvs-${k % 8}`,
      service_code: SEED_SERVICE_CODE,
      http_live_url: `http://xvs-${k % 8}.example/live/`,
      input_bytes: 1_000_000 + k,
      opaque: `order%3D${k}`,
      inputs: [
        {
          url: '',
          service_code: SEED_SERVICE_CODE,
          user_name: `user${k % 200}`,
          device_type: 1,
          device_version: '451',
        },
      ],
      outputs: OUTPUTS.map((output, index) => ({
        tag: output.tag,
        format: output.container,
        file_name: `${id}_${output.tag}`,
        relative_dir: `${SEED_SERVICE_CODE}/${output.container}/`,
        width: output.width,
        height: output.height,
        http_output_bytes: 1000 * k,
        http_connections_num: k % 17,
        live_url: `http://xvs-${k % 8}.example/live/${id}_${output.tag}.${output.container}`,
        streams: [
          {
            index: 0,
            codec_type: 0,
            codec_id: 28,
            width: output.width,
            height: output.height,
            copy: index === 0 ? 1 : 0,
            bit_rate: 1_500_000 + k,
          },
          { index: 1, codec_type: 1, codec_id: 86018, width: 0, height: 0, copy: 1, bit_rate: 128_000 },
        ],
      })),
    })
  }
  return { ret: 0, user_list: [], task_list }
}

/**
 * Seeds `tasks` real task states: one task_list answer folded as the poller folds it, then every
 * task's callbacks judged and kept one by one through {@link CallbackStore}, exactly as the
 * callback route keeps them, then folded by the projector. Resolves to how many callbacks it kept.
 */
export async function seedTasks(database: Database, tasks: number): Promise<number> {
  const db = database.db
  await db.transaction((tx) =>
    applyToGraph(tx as unknown as Db, [taskListEvidence(SEED_SERVICE_CODE, taskListOf(tasks), new Date())], new Date()),
  )
  const config = loadConfig({ env: {}, value: { services: [{ serviceCode: SEED_SERVICE_CODE, secrets: [SECRET] }] } })
  const policy = ingestPolicy(config)
  const store = new CallbackStore(db)
  let kept = 0
  let stamp = Date.now() - 60_000
  for (let k = 0; k < tasks; k++) {
    for (const fields of callbacksOf(k)) {
      stamp += 1
      const signed = signCallback(fields, { url: 'http://127.0.0.1/callbacks', secret: SECRET, nowMs: stamp })
      const body = Buffer.from(signed.body ?? '')
      const headers = { ...signed.headers, 'content-length': String(body.length), 'user-agent': 'bench-seed' }
      const verdict = judgeCallback(
        {
          method: 'POST',
          path: '/callbacks',
          rawQuery: '',
          mediaType: 'application/x-www-form-urlencoded',
          body,
          headers,
          remoteAddress: '127.0.0.1',
          receivedAt: new Date(stamp),
        },
        policy,
      )
      if (!verdict.ok) throw new Error(`seed callback refused: ${verdict.error.code}`)
      await store.keep(verdict.row)
      kept++
    }
  }
  await new GraphProjector({ database, log: console }).catchUp()
  return kept
}

/**
 * Grows the data as a deployment grows: more tasks over time, each getting what a seeded task got
 * (its callbacks copied in one set-based statement under a new task id, started `tasks` minutes
 * later per generation), until `callbacks` holds `total` rows. Nothing is folded here: see
 * {@link foldAndSettle}. `generation` is where the copies' numbering starts; resolves to the next.
 */
export async function growTasks(
  db: Db,
  realCount: number,
  tasks: number,
  total: number,
  generation: number,
): Promise<number> {
  const [have] = (await rows<{ n: string }>(db, sql`select count(*) as n from callbacks`)) as [{ n: string }]
  const missing = total - Number(have.n)
  if (missing <= 0) return generation
  const generations = Math.ceil(missing / realCount)
  const span = `${tasks * 60} seconds`
  // A copy's files are its own: the cloud names a recording or a thumbnail after its task, so two
  // tasks never share a file name.
  const renamed = (field: string) => `replace(c.values->>'${field}', c.task_id, c.task_id || '-' || g)`
  // (`values` holds the parsed callback: camelCase names.)
  const grownValues = sql.raw(
    `case when c.values ? 'fileName' then c.values || jsonb_build_object('fileName', ${renamed('fileName')},` +
      ` 'url', ${renamed('url')}) else c.values end`,
  )
  await db.execute(sql`
    insert into callbacks (dedupe_key, type, service_code, task_id, user_name, vs_id, service_created_at, received_at,
      last_delivered_at,
      deliveries, values, signed_at, method, path, query, body, headers, remote_address, signature, signature_error)
    select 'grown:' || g || ':' || c.id, c.type, c.service_code, c.task_id || '-' || g, c.user_name, c.vs_id,
      c.service_created_at + g * ${span}::interval, c.received_at + g * interval '1 second', c.last_delivered_at + g *
        interval '1 second',
      1, ${grownValues}, c.signed_at + g * interval '1 second', c.method, c.path, c.query, c.body, c.headers,
        c.remote_address, c.signature, c.signature_error
    from generate_series(${generation}::int, ${generation + generations - 1}::int) g
    cross join lateral (select * from callbacks r where r.id <= ${realCount} order by r.id) c
    limit ${missing}`)
  return generation + generations
}

/**
 * Folds everything stored into the graph (the projection caught up, as a gateway that has run
 * for a while has it), then `vacuum analyze`: fresh statistics and visibility maps, as
 * autovacuum leaves them. No window measures a projection at work, nor a page rewritten under it.
 */
export async function foldAndSettle(database: Database): Promise<void> {
  await new GraphProjector({ database, log: console }).catchUp()
  await database.db.execute(sql`vacuum analyze`)
}

/** The data's shape, stated in the report: tasks, callbacks, recordings and thumbnails per task. */
export interface DataShape {
  tasks: number
  callbacks: number
  recordingsPerTask: number
  thumbnailsPerTask: number
}

export async function dataShape(db: Db): Promise<DataShape> {
  const [shape] = (await rows<Record<string, string>>(
    db,
    sql`select (select count(*) from tasks) as tasks, (select count(*) from callbacks) as callbacks,
      (select count(*) from callbacks where type = 2) as recordings, (select count(*) from callbacks where type = 9) as
        thumbnails`,
  )) as [Record<string, string>]
  const tasks = Number(shape.tasks)
  return {
    tasks,
    callbacks: Number(shape.callbacks),
    recordingsPerTask: Number(shape.recordings) / tasks,
    thumbnailsPerTask: Number(shape.thumbnails) / tasks,
  }
}

/** Rows of a raw statement on either driver (postgres.js answers an array, PGlite an object holding one). */
export async function rows<T>(db: Db, statement: ReturnType<typeof sql>): Promise<T[]> {
  const answer = await db.execute(statement)
  return (Array.isArray(answer) ? answer : (answer as unknown as { rows: T[] }).rows) as T[]
}

/**
 * What every livegate of this part runs with. No pruning: the seeded callbacks are older than the
 * retention window, which would otherwise delete the data under measurement while it is measured.
 * The task page (50 tasks with every part) costs about 101,000, past `graphql.maxCost`'s default
 * of 100,000: a deployment that serves it raises the limit, as this one does.
 */
export const HELD_SETTINGS = { retention: { intervalMs: 0 }, graphql: { maxCost: 250_000 } }

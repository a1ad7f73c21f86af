import { randomUUID } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import { describe, expect } from 'vitest'
import { applyToGraph, taskListEvidence } from '../../src/work/graph/graph.evidence.js'
import { tasks, users } from '../../src/storage/tables/graph.table.js'
import type { Db } from '../../src/storage/database.client.js'
import { deriveTask } from '../../src/fold/task.derive.js'
import { taskListAnswerSchema } from '../../src/model/task-list.schema.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { type GatewayFixtures, test } from '../support/gateway.fixture.js'

const taskRow = async ({ db }: Pick<GatewayFixtures, 'db'>, taskId: string) => {
  const [row] = await db.database.db.select().from(tasks).where(eq(tasks.taskId, taskId))
  return row
}

describe(`the graph is a projection of the callbacks (${driverName})`, () => {
  test('a session folds into one task row, updated after each callback', async ({ deliver, db }) => {
    const id = `task-${randomUUID()}`
    const samples = sampleCallbacks(id)
    await deliver(samples.liveStart as Record<string, string>)
    expect(await taskRow({ db }, id)).toMatchObject({
      status: 'LIVE',
      author: 'alice',
      listed: false,
      sortAt: new Date(1444701446 * 1000),
    })
    await deliver(samples.liveResume as Record<string, string>)
    expect(await taskRow({ db }, id)).toMatchObject({ status: 'WAITING_RECONNECT' })
    await deliver(samples.liveEnd as Record<string, string>)
    const row = await taskRow({ db }, id)
    expect(row).toMatchObject({ status: 'ENDED', endReason: 'USER_STOPPED' })
    expect(deriveTask(row!.state).outputs[0]).toMatchObject({ tag: 'tcp_output_live_only', httpOutputBytes: 1048576 })
  })

  test('concurrent callbacks for one task are all folded: none is lost to a race', async ({ deliver, db }) => {
    const id = `task-${randomUUID()}`
    const base = Date.now()
    const resumes = Array.from(
      { length: 30 },
      (_, i) =>
        ({ ...sampleCallbacks(id).liveResume, status: String(i % 2), seq: String(i) }) as Record<string, string>,
    )
    const answers = await Promise.all(resumes.map((fields, i) => deliver(fields, { nowMs: base - 30_000 + i })))
    expect(answers.every((a) => a.status === 200)).toBe(true)
    const row = await taskRow({ db }, id)
    expect(row?.state.resumes).toHaveLength(30)
    // The latest by signed time (i = 29, status 1) decides, whatever order they committed in.
    expect(row?.status).toBe('LIVE')
  })

  test('a client disconnect folds into its user', async ({ deliver, db }) => {
    const name = `user-${randomUUID()}`
    await deliver({ ...sampleCallbacks('x').clientDisconnect, username: name, disconnect_reason: '0' } as Record<
      string,
      string
    >)
    const [row] = await db.database.db.select().from(users).where(eq(users.userName, name))
    expect(row?.state.disconnects).toHaveLength(1)
    expect(row?.state.disconnects[0]?.value).toEqual({ reason: 0, sessionDuration: 3600 })
  })

  test('a task listed by one task_list answer and missing from the next has VANISHED', async ({ deliver, db }) => {
    const id = `task-${randomUUID()}`
    const serviceCode = `SVC-${randomUUID()}`
    await deliver(sampleCallbacks(id).liveStart as Record<string, string>)
    const answer = taskListAnswerSchema.parse({
      ret: 0,
      user_list: [
        { user_name: 'alice', vs_id: 'xvs-5', service_code: serviceCode, client_version: '451', device_type: '10' },
      ],
      task_list: [{ id, vs_id: 'xvs-5', service_code: serviceCode, outputs: [], inputs: [], input_bytes: 10 }],
    })
    const apply = (a: typeof answer, at: number) =>
      db.database.db.transaction((tx) =>
        applyToGraph(tx as unknown as Db, [taskListEvidence(serviceCode, a, new Date(at))], new Date(at)),
      )
    const first = await apply(answer, 1_000)
    expect(first.tasks.map((t) => t.taskId)).toEqual([id])
    // The same answer again changes nothing but the sighting time; an empty one makes it vanish.
    await apply(answer, 2_000)
    const gone = await apply({ ...answer, task_list: [], user_list: [] }, 3_000)
    expect(gone.tasks).toHaveLength(1)
    expect(gone.users).toHaveLength(1)
    const [row] = await db.database.db
      .select()
      .from(tasks)
      .where(and(eq(tasks.serviceCode, serviceCode), eq(tasks.taskId, id)))
    expect(row).toMatchObject({ status: 'ENDED', endReason: 'VANISHED', listed: false })
    const [user] = await db.database.db.select().from(users).where(eq(users.serviceCode, serviceCode))
    expect(user).toMatchObject({ userName: 'alice', online: false })
    // Nothing listed, nothing was listed: an empty answer touches nothing.
    expect(await apply({ ...answer, task_list: [], user_list: [] }, 4_000)).toEqual({ tasks: [], users: [] })
  })
})

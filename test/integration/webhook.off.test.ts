import { randomUUID } from 'node:crypto'
import { count } from 'drizzle-orm'
import { expect } from 'vitest'
import { webhookEvents } from '../../src/storage/tables/webhook.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'

// Without a webhook endpoint nobody reads derived events: the projector does not write them,
// so a gateway without webhooks pays nothing for them on every pass.
test(`no derived webhook events are kept without an endpoint (${driverName})`, async ({ gateway, deliver }) => {
  const taskId = randomUUID()
  const samples = sampleCallbacks(taskId) as Record<string, Record<string, string>>
  expect((await deliver(samples.liveStart as Record<string, string>)).status).toBe(200)
  expect((await deliver(samples.liveEnd as Record<string, string>)).status).toBe(200)
  await gateway.settle()
  const [row] = await gateway.database.db.select({ n: count() }).from(webhookEvents)
  expect(row?.n).toBe(0)
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  DOORBELL_CHANNEL,
  EVENT_CHANNEL,
  HEARTBEAT_CHANNEL,
  SAMPLE_CHANNEL,
  WEBHOOK_CHANNEL,
} from '../../src/model/notify.channels.js'
import { notifyOnChannel } from '../../src/storage/notify.statements.js'
import { ChannelListener } from '../../src/work/channel.listener.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

// The one listener of a process, on a real database. What was not handed out is judged by a
// marker sent after it: one listening connection hears the channels in the order they rang.

const quiet = { warn: () => {}, info: () => {}, error: () => {} }
let db: TestDatabase

beforeAll(async () => {
  db = await openTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

const notify = (channel: string, payload: string) => db.database.db.execute(notifyOnChannel(channel, payload))

describe(`the channel listener on ${driverName}`, () => {
  it('hands each payload to the subscribers of its channel only, and stops handing it once told', async () => {
    const listener = new ChannelListener({ database: db.database, log: quiet })
    const marker = new ChannelListener({ database: db.database, log: quiet })
    await Promise.all([listener.start(), marker.start()])
    const heard: string[] = []
    const marked: string[] = []
    marker.on(SAMPLE_CHANNEL, (payload) => marked.push(payload))
    const offEvents = listener.on(EVENT_CHANNEL, (payload) => heard.push(`events ${payload}`))
    listener.on(SAMPLE_CHANNEL, (payload) => heard.push(`samples ${payload}`))
    listener.on(SAMPLE_CHANNEL, (payload) => heard.push(`samples again ${payload}`))
    await notify(EVENT_CHANNEL, 'a')
    await notify(SAMPLE_CHANNEL, 'b')
    await notify(WEBHOOK_CHANNEL, 'c')
    await expect.poll(() => heard.length).toBe(3)
    offEvents()
    await notify(EVENT_CHANNEL, 'd')
    await listener.stop()
    await notify(SAMPLE_CHANNEL, 'e')
    await expect.poll(() => marked).toEqual(['b', 'e'])
    await marker.stop()
    expect(heard).toEqual(['events a', 'samples b', 'samples again b'])
    expect(listener.listening).toBe(true)
  })

  it('keeps handing a payload to the other subscribers when one throws, and says so', async () => {
    const errors: unknown[] = []
    const listener = new ChannelListener({
      database: db.database,
      log: { ...quiet, error: (fields: unknown) => void errors.push(fields) },
    })
    await listener.start()
    const heard: string[] = []
    listener.on(WEBHOOK_CHANNEL, () => {
      throw new Error('a part failed')
    })
    listener.on(WEBHOOK_CHANNEL, (payload) => heard.push(payload))
    await notify(WEBHOOK_CHANNEL, 'due')
    await expect.poll(() => heard).toEqual(['due'])
    await listener.stop()
    expect(errors).toHaveLength(1)
  })

  it("keeps the heartbeat channel to itself, and hands doorbells only to the doorbell's subscribers", async () => {
    const listener = new ChannelListener({ database: db.database, log: quiet })
    await listener.start()
    const heard: string[] = []
    listener.on(HEARTBEAT_CHANNEL, (payload) => heard.push(`heartbeat ${payload}`))
    listener.on(EVENT_CHANNEL, (payload) => heard.push(`events ${payload}`))
    listener.on(DOORBELL_CHANNEL, (payload) => heard.push(`doorbell ${payload}`))
    await notify(HEARTBEAT_CHANNEL, '{"probe":"x"}')
    await notify(DOORBELL_CHANNEL, '{"l":1}')
    await notify(EVENT_CHANNEL, '{"a":1}')
    await expect.poll(() => heard.length).toBe(2)
    await listener.stop()
    expect(heard).toEqual(['doorbell {"l":1}', 'events {"a":1}'])
  })
})

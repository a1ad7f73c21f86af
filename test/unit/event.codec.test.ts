import { describe, expect, it } from 'vitest'
import { decodeEvent, encodeEvent, eventChannel, type RealtimeEvent } from '../../src/model/event.codec.js'
import { DOORBELL_CHANNEL, EVENT_CHANNEL, SAMPLE_CHANNEL } from '../../src/model/notify.channels.js'

describe('the event codec', () => {
  it.each<RealtimeEvent>([
    { kind: 'log' },
    { kind: 'task', serviceCode: 'A', taskId: 't' },
    { kind: 'action', id: 7 },
    { kind: 'incident', id: 9 },
    { kind: 'sample', serviceCode: 'A', at: 1_700_000_000_000 },
  ])('round-trips %o', (event) => {
    expect(decodeEvent(encodeEvent(event) as string)).toEqual(event)
  })

  it('reads nothing from an incident id that is not a positive whole number', () => {
    for (const payload of ['{"i":0}', '{"i":-1}', '{"i":1.5}', '{"i":"3"}'])
      expect(decodeEvent(payload)).toBeUndefined()
  })

  it('sends doorbells, entity changes and samples each on a channel of its own', () => {
    expect(eventChannel({ kind: 'log' })).toBe(DOORBELL_CHANNEL)
    for (const event of [
      { kind: 'task', serviceCode: 'A', taskId: 't' },
      { kind: 'action', id: 7 },
      { kind: 'incident', id: 9 },
    ] as const)
      expect(eventChannel(event)).toBe(EVENT_CHANNEL)
    expect(eventChannel({ kind: 'sample', serviceCode: 'A', at: 1 })).toBe(SAMPLE_CHANNEL)
  })

  it('reads nothing from a sample whose time is not a number', () => {
    for (const payload of ['{"s":["A","1"]}', '{"s":[1,1]}', '{"s":["A"]}'])
      expect(decodeEvent(payload)).toBeUndefined()
  })
})

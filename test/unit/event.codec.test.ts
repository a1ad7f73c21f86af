import { describe, expect, it } from 'vitest'
import { decodeEvent, encodeEvent, type RealtimeEvent } from '../../src/model/event.codec.js'

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
})

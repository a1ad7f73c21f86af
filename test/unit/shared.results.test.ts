import { type FormattedExecutionResult, parse } from 'graphql'
import { describe, expect, it } from 'vitest'
import { operationKey, PendingPayload, SharedResults } from '../../src/adapters/websocket/shared.results.js'

// The rule of shared subscription results, alone: one execution per (event, operation), the
// same bytes for every subscriber of both, and what makes two operations one.

const result = (n: number): FormattedExecutionResult => ({ data: { n } })
const text = (payload: unknown): string => (payload as Buffer).toString()

describe('SharedResults', () => {
  it('executes an event once per operation and hands every subscriber the same bytes', () => {
    const shared = new SharedResults()
    const event = { n: 1 }
    let runs = 0
    const execute = (value: unknown) => {
      runs++
      return result((value as { n: number }).n)
    }
    const first = shared.resultOf(shared.operation('A'), event, execute)
    for (let subscriber = 0; subscriber < 5; subscriber++)
      expect(shared.resultOf(shared.operation('A'), event, execute)).toBe(first)
    expect(runs).toBe(1)
    // The payload is the `next` message's tail: the result's JSON and the message's closing brace.
    expect(text(first)).toBe('{"data":{"n":1}}}')
    // Another operation, another execution; the first one's result is still known after it.
    shared.resultOf(shared.operation('B'), event, execute)
    expect(shared.resultOf(shared.operation('A'), event, execute)).toBe(first)
    expect(runs).toBe(2)
    expect(shared.counts).toEqual({ executed: 2, delivered: 0 })
  })

  it('gives subscribers of one operation text one key object, and another text another', () => {
    const shared = new SharedResults()
    const a = shared.operation(JSON.stringify(['subscription { a }', null]))
    expect(shared.operation(JSON.stringify(['subscription { a }', null]))).toBe(a)
    expect(shared.operation(JSON.stringify(['subscription { b }', null]))).not.toBe(a)
  })

  it('never shares between two events, even equal ones, nor an event that is not an object', () => {
    const shared = new SharedResults()
    let runs = 0
    const execute = () => result(++runs)
    shared.resultOf(shared.operation('A'), { n: 1 }, execute)
    shared.resultOf(shared.operation('A'), { n: 1 }, execute)
    shared.resultOf(shared.operation('A'), 7, execute)
    shared.resultOf(shared.operation('A'), 7, execute)
    expect(runs).toBe(4)
  })

  it('tells every waiter of a result still computed, in order, and keeps no failure', async () => {
    const shared = new SharedResults()
    const event = {}
    let settle: (value: FormattedExecutionResult) => void = () => {}
    const pending = shared.resultOf(shared.operation('A'), event, () => new Promise((resolve) => (settle = resolve)))
    expect(pending).toBeInstanceOf(PendingPayload)
    expect(shared.resultOf(shared.operation('A'), event, () => result(0))).toBe(pending)
    const told: string[] = []
    for (const name of ['first', 'second'])
      (pending as PendingPayload).wait(
        (bytes) => told.push(`${name} ${text(bytes)}`),
        () => told.push('failed'),
      )
    settle(result(3))
    await expect.poll(() => told).toEqual(['first {"data":{"n":3}}}', 'second {"data":{"n":3}}}'])
    // Settled, later subscribers read the bytes at once.
    expect(text(shared.resultOf(shared.operation('A'), event, () => result(0)))).toBe('{"data":{"n":3}}}')

    const failing = {}
    const failed = shared.resultOf(shared.operation('A'), failing, () =>
      Promise.reject(new Error('gone')),
    ) as PendingPayload
    const error = await new Promise((resolve) => failed.wait(resolve, resolve))
    expect(error).toEqual(new Error('gone'))
    // A failure is not kept: the next subscriber executes again.
    expect(text(shared.resultOf(shared.operation('A'), failing, () => result(4)))).toBe('{"data":{"n":4}}}')
  })
})

describe('operationKey', () => {
  const document = parse(
    'subscription S($filter: F, $after: String, $size: Int) { tick(filter: $filter, after: $after) { n ' +
      'image(size: $size) } }',
  )
  const key = (variables: Record<string, unknown>, auth: unknown = 'all') =>
    operationKey({ document, operationName: 'S', variables }, auth)

  it('ignores the variables only the root field reads: they choose the events, not the result', () => {
    expect(key({ filter: { a: 1 }, after: 'x', size: 2 })).toBe(key({ filter: { b: 2 }, size: 2 }))
  })

  it('tells apart what changes a result: a variable read in the selection, the scope, the operation', () => {
    expect(key({ size: 2 })).not.toBe(key({ size: 3 }))
    expect(key({ size: 2 }, 'all')).not.toBe(key({ size: 2 }, { codes: ['A'] }))
    expect(operationKey({ document, operationName: null, variables: { size: 2 } }, 'all')).not.toBe(key({ size: 2 }))
  })
})

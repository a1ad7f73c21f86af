import { Writable } from 'node:stream'
import { eq } from 'drizzle-orm'
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import {
  deliverySpan,
  traceExtensions,
  traceparentOfConnectionInit,
  withOperationSpan,
} from '../../src/adapters/ops/operation.spans.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET, send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { type FakeUpstream, startFakeUpstream } from '../support/upstream.server.js'

// A caller's trace, as a W3C traceparent header carries it.
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'

describe(`tracing, with an in-memory exporter (${driverName})`, () => {
  let db: TestDatabase
  let upstream: FakeUpstream
  let gateway: Gateway
  const exporter = new InMemorySpanExporter()
  const lines: Array<Record<string, unknown>> = []
  const spans = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name)
  const one = (name: string, where: (span: ReadableSpan) => boolean = () => true) => {
    const found = spans(name).filter(where)
    expect(found, name).toHaveLength(1)
    return found[0] as ReadableSpan
  }

  beforeAll(async () => {
    db = await openTestDatabase()
    upstream = await startFakeUpstream()
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n'))
          if (line) lines.push(JSON.parse(line) as Record<string, unknown>)
        done()
      },
    })
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        log: { level: 'info', format: 'json' },
        services: [...TEST_CONFIG.services, { serviceCode: 'POLLED', secrets: [SECRET], baseUrl: upstream.url }],
        upstream: { pollIntervalMs: 200 },
        tracing: { enabled: true, serviceName: 'livegate-test' },
      },
    })
    gateway = await startGateway(config, { database: db.database, spanExporter: exporter, logStream })
  })
  afterAll(async () => {
    await gateway?.close()
    await upstream?.close()
    await db?.drop()
  })

  it(
    'traces a callback from the route through the verdict ' + "and the commit, under the caller's traceparent",
    async () => {
      const request = signFor(gateway, sampleCallbacks('trace-task-1').liveStart as Record<string, string>)
      const answer = await send({
        ...request,
        headers: { ...request.headers, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
      })
      expect(answer.text).toBe('{"ret":0}')
      await gateway.settle()

      const route = one('POST /callbacks', (span) => span.spanContext().traceId === CALLER_TRACE)
      expect(route.parentSpanContext?.spanId).toBe(CALLER_SPAN)
      expect(route.attributes).toMatchObject({
        'http.route': '/callbacks',
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'livegate.callback.outcome': 'kept',
      })
      const children = (name: string) =>
        one(name, (span) => span.parentSpanContext?.spanId === route.spanContext().spanId)
      const verdict = children('callback verdict')
      expect(verdict.attributes).toMatchObject({
        'livegate.callback.verdict': 'accepted',
        'livegate.callback.type': 0,
        'livegate.service_code': 'TESTING',
      })
      const commit = children('callback commit')
      expect(commit.spanContext().traceId).toBe(CALLER_TRACE)
      expect(commit.attributes).toMatchObject({
        'livegate.callback.outcome': 'kept',
        'livegate.callback.id': expect.any(Number),
      })

      // The commit's span is kept with the callback, for whoever delivers its events later.
      const [row] = await db.database.db
        .select({ traceparent: callbacks.traceparent })
        .from(callbacks)
        .where(eq(callbacks.id, commit.attributes['livegate.callback.id'] as number))
      expect(row?.traceparent).toBe(`00-${CALLER_TRACE}-${commit.spanContext().spanId}-01`)

      // The batch statement is a trace of its own, linked to the commit; so is the projector's pass.
      const linksToCommit = (span: ReadableSpan) =>
        span.links.some((link) => link.context.spanId === commit.spanContext().spanId)
      const append = one('callbacks append', linksToCommit)
      expect(append.spanContext().traceId).not.toBe(CALLER_TRACE)
      await expect.poll(() => spans('projector pass').filter(linksToCommit).length).toBe(1)

      // Every line the request logged names its trace.
      const kept = lines.find(
        (line) => line.msg === 'callback kept' && line.callbackId === commit.attributes['livegate.callback.id'],
      )
      expect(kept?.traceId).toBe(CALLER_TRACE)
    },
  )

  it(
    'starts a trace of its own for a callback without a ' + "traceparent, and records a refusal on the route's span",
    async () => {
      const request = signFor(gateway, sampleCallbacks('trace-task-2').liveStart as Record<string, string>, {
        secret: 'wrong-secret',
      })
      const answer = await send(request)
      expect(answer.status).toBe(401)
      const verdict = one('callback verdict', (span) => span.attributes['livegate.callback.verdict'] !== 'accepted')
      const route = one('POST /callbacks', (span) => span.spanContext().spanId === verdict.parentSpanContext?.spanId)
      expect(route.parentSpanContext).toBeUndefined()
      expect(route.attributes['http.response.status_code']).toBe(401)
      expect(spans('callback commit').some((span) => span.spanContext().traceId === route.spanContext().traceId)).toBe(
        false,
      )
    },
  )

  it('traces other routes alike, and their request line names the trace', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c'
    const answer = await send({
      method: 'POST',
      url: `${gateway.url}/graphql`,
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      body: '{"query":"{ nope"}',
    })
    expect(answer.status).toBe(400)
    const route = one('POST /graphql', (span) => span.spanContext().traceId === traceId)
    expect(route.attributes['http.response.status_code']).toBe(400)
    await expect
      .poll(() => lines.find((line) => line.msg === 'request answered' && line.url === '/graphql')?.traceId)
      .toBe(traceId)
  })

  it('makes a span of each task_list poll, in a trace of its own', async () => {
    await expect
      .poll(
        () =>
          spans('task_list poll').filter(
            (span) =>
              span.attributes['livegate.service_code'] === 'POLLED' &&
              span.attributes['livegate.poll.outcome'] === 'ok',
          ).length,
      )
      .toBeGreaterThan(0)
    const poll = spans('task_list poll')[0] as ReadableSpan
    expect(poll.parentSpanContext).toBeUndefined()
  })

  it(
    "gives the pipeline an operation span (the conventions' name and attributes) and the hub a delivery span " +
      'linked to the callback',
    async () => {
      const [row] = await db.database.db
        .select({ traceparent: callbacks.traceparent })
        .from(callbacks)
        .where(eq(callbacks.taskId, 'trace-task-1'))
      const traceparent = row?.traceparent as string
      // A graphql-ws client's connection_init payload carries its trace beside its key.
      const fromInit = traceparentOfConnectionInit({ authorization: 'Bearer k', traceparent, tracestate: 'vendor=1' })
      expect(fromInit).toEqual({ parent: traceparent, parentState: 'vendor=1' })
      expect(traceparentOfConnectionInit({ traceparent: 42 })).toEqual({})
      const extensions = await withOperationSpan(
        {
          operationType: 'query',
          operationName: 'Tasks',
          document: 'query Tasks { tasks { totalCount } }',
          transport: 'ws',
          ...fromInit,
        },
        async () => traceExtensions(),
      )
      const operation = one('query Tasks')
      expect(operation.attributes).toMatchObject({
        'graphql.operation.type': 'query',
        'graphql.operation.name': 'Tasks',
        'graphql.document': 'query Tasks { tasks { totalCount } }',
        'livegate.transport': 'ws',
      })
      expect(operation.spanContext().traceId).toBe(CALLER_TRACE)
      expect(operation.parentSpanContext?.traceState?.get('vendor')).toBe('1')
      expect(extensions).toEqual({ traceId: CALLER_TRACE })
      expect(traceExtensions()).toEqual({})
      // Over HTTP the operation is a child of whatever span is active (the request's).
      await withOperationSpan(
        { operationType: 'subscription', operationName: null, transport: 'http', documentHash: 'ab'.repeat(32) },
        () => undefined,
      )
      expect(one('subscription').attributes).toMatchObject({
        'graphql.operation.type': 'subscription',
        'livegate.document.sha256': 'ab'.repeat(32),
      })

      deliverySpan([traceparent, null, traceparent], () => undefined)
      const delivery = one('events deliver')
      expect(delivery.links.map((link) => link.context.traceId)).toEqual([CALLER_TRACE])
      expect(delivery.attributes['livegate.events']).toBe(3)
    },
  )
})

import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signCallback } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { send } from '../support/gateway.fixture.js'
import { ROOT, type ServeProcess, startListeningProcess, startServeProcess } from '../support/livegate.process.js'
import { subscribe } from '../support/subscription.client.js'

// `livegate serve` as a real process, tracing turned on by the standard OTEL_* variables alone,
// exporting to a real OTLP/HTTP receiver process (test/fixtures/otlp.receiver.mjs).

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  links?: Array<{ traceId: string; spanId: string }>
  attributes?: Array<{ key: string; value: Record<string, unknown> }>
}

interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }
    scopeSpans: Array<{ spans: OtlpSpan[] }>
  }>
}

const dir = mkdtempSync(join(tmpdir(), 'livegate-otlp-'))
const configFile = join(dir, 'livegate.json')
writeFileSync(
  configFile,
  JSON.stringify({ port: 0, services: [{ serviceCode: 'TESTING', secrets: [{ env: 'TESTING_SECRET' }] }] }),
)

describe('tracing to a real OTLP/HTTP receiver', () => {
  let receiver: ServeProcess
  let serve: ServeProcess

  /** Every span the receiver got so far, each with its resource's service name. */
  const received = (): Array<OtlpSpan & { service: string | undefined }> =>
    receiver
      .output()
      .split('\n')
      .filter((line) => line.startsWith('otlp {'))
      .flatMap((line) => (JSON.parse(line.slice('otlp '.length)) as OtlpExport).resourceSpans)
      .flatMap((resource) => {
        const service = resource.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value
          .stringValue
        return resource.scopeSpans.flatMap((scope) => scope.spans.map((span) => ({ ...span, service })))
      })

  beforeAll(async () => {
    receiver = await startListeningProcess(
      [join(ROOT, 'test/fixtures/otlp.receiver.mjs')],
      process.env,
      /otlp receiver listening on (http:\/\/\S+)/,
    )
    serve = await startServeProcess(['--config', configFile], {
      ...process.env,
      TESTING_SECRET: 'abc',
      LIVEGATE_DATA_DIR: 'memory://',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'livegate-otlp-test',
      // Spans leave in batches every 5 s (the SDK's default): the stop must send what is left.
    })
  }, 300_000)

  afterAll(() => {
    serve?.process.kill('SIGKILL')
    receiver?.process.kill('SIGKILL')
  })

  it("receives the callback's route and commit spans in one trace, its delivery to a subscriber linked to it, and " +
    "the request's log lines name it", async () => {
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
    const parentSpanId = '1122334455667788'
    // A subscriber over graphql-ws, whose connection_init continues a trace of its own.
    const subscriberTrace = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'
    const subscriber = subscribe(
      serve.url,
      'subscription { notificationReceived(filter: { taskIds: ["otlp-task"] }) { id taskId } }',
      {},
      { traceparent: `00-${subscriberTrace}-aabbccddeeff0011-01` },
    )
    await expect
      .poll(() => received().some((span) => span.traceId === subscriberTrace && span.name === 'subscription'))
      .toBe(true)
    const signed = signCallback(sampleCallbacks('otlp-task').liveStart as Record<string, string>, {
      url: `${serve.url}/callbacks`,
      method: 'POST',
      secret: 'abc',
      headerPrefix: 'svc',
      nowMs: Date.now(),
    })
    const answer = await send({
      ...signed,
      headers: { ...signed.headers, traceparent: `00-${traceId}-${parentSpanId}-01` },
    })
    expect(answer.text).toBe('{"ret":0}')

    await expect
      .poll(() =>
        received()
          .filter((span) => span.traceId === traceId)
          .map((span) => span.name)
          .sort(),
      )
      .toEqual(['POST /callbacks', 'callback commit', 'callback verdict'])
    const trace = received().filter((span) => span.traceId === traceId)
    const route = trace.find((span) => span.name === 'POST /callbacks') as OtlpSpan & { service: string }
    expect(route.service).toBe('livegate-otlp-test')
    expect(route.parentSpanId).toBe(parentSpanId)
    const commit = trace.find((span) => span.name === 'callback commit') as OtlpSpan
    expect(commit.parentSpanId).toBe(route.spanId)
    expect(trace.find((span) => span.name === 'callback verdict')?.parentSpanId).toBe(route.spanId)
    // The projector's pass, a trace of its own, links back to the commit.
    await expect
      .poll(() =>
        received().some(
          (span) => span.name === 'projector pass' && (span.links ?? []).some((link) => link.spanId === commit.spanId),
        ),
      )
      .toBe(true)
    // So does the hub's delivery to the subscriber, which got the callback.
    await expect
      .poll(() =>
        received().some(
          (span) => span.name === 'events deliver' && (span.links ?? []).some((link) => link.spanId === commit.spanId),
        ),
      )
      .toBe(true)
    expect((await subscriber.waitFor(1))[0]).toMatchObject({ notificationReceived: { taskId: 'otlp-task' } })
    await subscriber.dispose()

    const lines = serve
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const kept = lines.filter((line) => line.msg === 'callback kept')
    expect(kept).toHaveLength(1)
    expect(kept[0]?.traceId).toBe(traceId)
  }, 300_000)

  it('sends the spans still buffered when it stops (SIGTERM), before it exits', async () => {
    const traceId = 'ffeeddccbbaa99887766554433221100'
    const signed = signCallback(sampleCallbacks('otlp-stop').liveStart as Record<string, string>, {
      url: `${serve.url}/callbacks`,
      method: 'POST',
      secret: 'abc',
      headerPrefix: 'svc',
      nowMs: Date.now(),
    })
    const answer = await send({
      ...signed,
      headers: { ...signed.headers, traceparent: `00-${traceId}-1122334455667788-01` },
    })
    expect(answer.text).toBe('{"ret":0}')
    const exited = new Promise<number | null>((resolve) => serve.process.once('exit', (code) => resolve(code)))
    serve.process.kill('SIGTERM')
    expect(await exited).toBe(0)
    await expect
      .poll(() =>
        received()
          .filter((span) => span.traceId === traceId)
          .map((span) => span.name)
          .sort(),
      )
      .toEqual(['POST /callbacks', 'callback commit', 'callback verdict'])
  }, 300_000)
})

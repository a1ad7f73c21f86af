import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { CallbackStore } from '../../work/ingest/callback.store.js'
import type { CallbackRecord, RefusalRecord } from '../../model/callback.record.js'
import { codeForFrameworkError, errorAnswer, type LivegateError, livegateError } from '../../model/error.catalogue.js'
import type { Histogram } from 'prom-client'
import type { Metrics } from '../../work/metrics.registry.js'
import type { CallbackSpool } from '../../work/ingest/spool/callback.spool.js'
import { intakeCallback, typeLabel } from '../../work/ingest/callback.intake.js'
import { type InboundRequest, type IngestPolicy, judgeCallback, refusalRow } from '../../model/callback.verdict.js'
import type { RefusalLimiter } from './refusal.limiter.js'
import { currentTraceparent, inSpan, tracingActive } from '../../work/tracing.spans.js'
import { inRequestContext, requestSpan } from '../ops/operation.spans.js'

/** What the callback route needs; the clock is injectable so tests can sign at fixed times. */
export interface CallbackRouteOptions {
  store: CallbackStore
  policy: IngestPolicy
  bodyLimit: number
  now?: () => Date
  /** Where accepted callbacks go while the database cannot take them; without it they get 503. */
  spool?: CallbackSpool
  /** Which refusals are recorded; without it, every one is. */
  limiter?: RefusalLimiter
  metrics?: Pick<Metrics, 'callbacks' | 'ingestSeconds'>
  /** Seconds from a kept callback's signed timestamp to its arrival, by service code. */
  delays?: Pick<Histogram<'service_code'>, 'observe'>
}

/** The `outcome` label of the ingest latency histogram. */
type IngestOutcome = 'kept' | 'duplicate' | 'spooled' | 'refused' | 'unavailable'

const EMPTY = Buffer.alloc(0)
const OK_BODY = '{"ret":0}'

/**
 * The one address the service calls: GET and POST at `/callbacks` and any path below it. This
 * plugin only translates HTTP to {@link judgeCallback} and its verdict back to HTTP; the raw-body
 * parser lives here so no other route sees it.
 */
export const callbackRoute: FastifyPluginAsync<CallbackRouteOptions> = async (app, options) => {
  const { store, policy, spool, limiter, metrics } = options
  const now = options.now ?? (() => new Date())

  // The signature covers the exact bytes, so the body is never parsed before it is checked.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: options.bodyLimit }, (_request, body, done) => {
    done(null, body)
  })

  const measure = (reply: FastifyReply, type: string, verdict: string, outcome: IngestOutcome) => {
    metrics?.callbacks.inc({ type, verdict })
    metrics?.ingestSeconds.observe({ outcome }, reply.elapsedTime / 1000)
  }

  // A refusal is recorded before it is answered (if even that fails, the log says so), unless
  // its source is over its rate: then it is answered alike but neither recorded nor logged at
  // info, so junk cannot fill the disk. A callback refused for want of storage is never limited.
  const refuse = async (
    request: FastifyRequest,
    reply: FastifyReply,
    error: LivegateError,
    refusal: RefusalRecord | undefined,
  ) => {
    const gate = error.code === 'STORAGE_UNAVAILABLE' ? undefined : limiter
    let limited = gate !== undefined && !gate.allow(request.ip, Date.now())
    if (refusal && !limited) {
      const recorded = await store.refuse(refusal, gate?.quota(request.ip)).catch((storeError: unknown) => {
        request.log.error({ err: storeError, reason: error.code }, 'could not record a refused callback')
        return true
      })
      limited = !recorded
    }
    if (limited)
      request.log.debug({ reason: error.code }, 'callback refused; not recorded, its source is over its rate')
    else request.log.info({ reason: error.code, fields: error.fields }, 'callback refused')
    measure(
      reply,
      typeLabel(refusal?.type),
      error.code,
      error.code === 'STORAGE_UNAVAILABLE' ? 'unavailable' : 'refused',
    )
    const answer = errorAnswer(error)
    return reply.code(answer.status).type('application/json').send(answer.body)
  }

  // Traced, the request's span is the route's; the verdict and the commit are its children, and
  // the commit's span is kept with the row so that the events it produces link back to it.
  const judge = (inbound: InboundRequest) =>
    inSpan('callback verdict', {}, (span) => {
      const verdict = judgeCallback(inbound, policy)
      span?.setAttributes(
        verdict.ok
          ? {
              'livegate.callback.verdict': 'accepted',
              'livegate.callback.type': verdict.row.type,
              'livegate.service_code': verdict.row.serviceCode,
            }
          : { 'livegate.callback.verdict': verdict.error.code },
      )
      return verdict
    })
  const commit = (row: CallbackRecord) =>
    inSpan('callback commit', {}, async (span) => {
      if (span) row.traceparent = currentTraceparent()
      const intake = await intakeCallback(row, store, spool)
      span?.setAttributes({
        'livegate.callback.outcome': intake.verdict,
        ...(intake.verdict === 'kept' || intake.verdict === 'duplicate'
          ? { 'livegate.callback.id': intake.kept.id }
          : {}),
      })
      return intake
    })

  // Untraced, the handler is what it was before tracing: one flag tested per request.
  const handler = (request: FastifyRequest, reply: FastifyReply) =>
    tracingActive() ? inRequestContext(request, () => handle(request, reply, true)) : handle(request, reply, false)

  const handle = async (request: FastifyRequest, reply: FastifyReply, traced: boolean) => {
    const inbound = toInbound(request, now())
    const verdict = traced ? judge(inbound) : judgeCallback(inbound, policy)
    if (!verdict.ok) return refuse(request, reply, verdict.error, verdict.refusal)
    const row = verdict.row
    const intake = traced ? await commit(row) : await intakeCallback(row, store, spool)
    if (traced) requestSpan(request)?.setAttribute('livegate.callback.outcome', intake.verdict)
    if (intake.verdict === 'unavailable') {
      request.log.error(
        { err: intake.storeError, spoolError: intake.spoolError },
        'could not keep a callback, nor spool it',
      )
      const error = livegateError('STORAGE_UNAVAILABLE')
      return refuse(request, reply, error, refusalRow(inbound, policy, error, verdict.fields))
    }
    if (intake.verdict === 'spooled') {
      request.log.warn(
        { err: intake.storeError, type: row.type, depth: spool?.depth() },
        'callback spooled: the database cannot take it now',
      )
    } else {
      request.log.info(
        { callbackId: intake.kept.id, type: row.type, deliveries: intake.kept.deliveries, signature: row.signature },
        intake.verdict === 'duplicate' ? 'callback delivered again' : 'callback kept',
      )
    }
    measure(reply, typeLabel(row.type), intake.verdict, intake.verdict)
    if (intake.verdict !== 'duplicate' && row.signedAt)
      options.delays?.observe(
        { service_code: row.serviceCode },
        Math.max(0, row.receivedAt.getTime() - row.signedAt.getTime()) / 1000,
      )
    return reply.code(200).type('application/json').send(OK_BODY)
  }

  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/callbacks', handler })
  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/callbacks/*', handler })

  // Errors fastify raises before the handler (size, framing) are answered from the catalogue too.
  app.setErrorHandler(async (error, request, reply) => {
    const code = codeForFrameworkError(error)
    if (code === 'INTERNAL') request.log.error({ err: error }, 'callback route failed')
    const refused = livegateError(code)
    // An oversized body is not kept anywhere: recording it would be the flood it guards against.
    return refuse(
      request,
      reply,
      refused,
      code === 'PAYLOAD_TOO_LARGE' ? undefined : refusalRow(toInbound(request, now()), policy, refused),
    )
  })
}

function toInbound(request: FastifyRequest, receivedAt: Date): InboundRequest {
  const url = request.raw.url ?? '/'
  const mark = url.indexOf('?')
  const contentType = request.headers['content-type']
  return {
    method: request.method,
    path: mark === -1 ? url : url.slice(0, mark),
    rawQuery: mark === -1 ? '' : url.slice(mark + 1),
    mediaType: contentType?.split(';', 1)[0]?.trim().toLowerCase() || undefined,
    body: Buffer.isBuffer(request.body) ? request.body : EMPTY,
    headers: request.headers,
    remoteAddress: request.ip,
    receivedAt,
  }
}

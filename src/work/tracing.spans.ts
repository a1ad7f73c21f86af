import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api'

/**
 * Spans of the units of work, through the OpenTelemetry API only. The SDK (exporter, context
 * manager, W3C propagator) is loaded by adapters/ops/tracing.sdk.ts when tracing is on; until
 * then every helper here runs its work and nothing else, so an untraced gateway pays one boolean
 * test per call instead of the API's no-op spans and contexts.
 */

let active = false
let tracer: Tracer = trace.getTracer('livegate')

/** Set by the SDK once it is registered, cleared when it shuts down. */
export function setTracingActive(on: boolean, version?: string): void {
  active = on
  tracer = trace.getTracer('livegate', version)
}

/** Whether spans are recorded and exported in this process. */
export function tracingActive(): boolean {
  return active
}

/** How a span of ours is started. */
export interface SpanOptions {
  attributes?: Attributes
  kind?: SpanKind
  links?: Link[]
  /** A new trace: background work (a poll, a projector pass) is no part of whatever ran before. */
  root?: boolean
  /** The parent, instead of the active context. */
  parent?: Context
  startTime?: Date
}

/**
 * Runs `run` inside a new active span, ended when it settles; a throw or rejection marks the span
 * failed and is passed on. With tracing off, `run` is called with no span.
 */
export function inSpan<T>(name: string, options: SpanOptions, run: (span: Span | undefined) => T): T {
  if (!active) return run(undefined)
  const parent = options.root ? ROOT_CONTEXT : (options.parent ?? context.active())
  const span = tracer.startSpan(name, spanOptions(options), parent)
  return context.with(trace.setSpan(parent, span), () => {
    let result: T
    try {
      result = run(span)
    } catch (error) {
      fail(span, error)
      span.end()
      throw error
    }
    if (result instanceof Promise) {
      return result.then(
        (value: unknown) => {
          span.end()
          return value
        },
        (error: unknown) => {
          fail(span, error)
          span.end()
          throw error
        },
      ) as T
    }
    span.end()
    return result
  })
}

/**
 * A span for work already done (its start taken before), for work that knows only at its end
 * whether it is worth a span: a projector pass that folded nothing is not.
 */
export function recordSpan(name: string, options: SpanOptions & { startTime: Date }, error?: unknown): void {
  if (!active) return
  const span = tracer.startSpan(
    name,
    spanOptions(options),
    options.root ? ROOT_CONTEXT : (options.parent ?? context.active()),
  )
  if (error !== undefined) fail(span, error)
  span.end()
}

/** Marks a span failed with the error, when there is a span. */
export function fail(span: Span | undefined, error: unknown): void {
  if (!span) return
  span.recordException(error instanceof Error ? error : String(error))
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) })
}

/**
 * The active span as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), or null without one:
 * what is kept beside a callback so whoever delivers its events later can link back to it.
 */
export function currentTraceparent(): string | null {
  if (!active) return null
  const carrier: Record<string, string> = {}
  propagation.inject(context.active(), carrier)
  return carrier.traceparent ?? null
}

/** The context a W3C `traceparent` names (a remote parent); the root context for a bad value. */
export function contextFromTraceparent(value: string | null | undefined, tracestate?: string | null): Context {
  if (!active || typeof value !== 'string' || value.length === 0) return ROOT_CONTEXT
  const carrier: Record<string, string> = { traceparent: value }
  if (tracestate) carrier.tracestate = tracestate
  return propagation.extract(ROOT_CONTEXT, carrier)
}

// The SDK keeps 128 links per span by default; more would be dropped unseen.
const MAX_LINKS = 128

/** Links to the spans the traceparents name, each once, bad and missing values left out. */
export function linksTo(traceparents: Iterable<string | null | undefined>): Link[] {
  if (!active) return []
  const seen = new Set<string>()
  const links: Link[] = []
  for (const value of traceparents) {
    if (!value || seen.has(value) || links.length >= MAX_LINKS) continue
    seen.add(value)
    const spanContext = trace.getSpanContext(contextFromTraceparent(value))
    if (spanContext && trace.isSpanContextValid(spanContext)) links.push({ context: spanContext })
  }
  return links
}

/**
 * A span for handing events out (to graphql-ws subscribers, or later to webhook endpoints), in a
 * trace of its own with a link to the span of each callback the events came from: the
 * `traceparent` kept with the callback in the log. The realtime engine calls it once per batch of
 * events it delivers, with the batch's callbacks' traceparents.
 */
export function deliverySpan<T>(
  eventTraceparents: Iterable<string | null | undefined>,
  run: (span: Span | undefined) => T,
  attributes?: Attributes,
): T {
  if (!active) return run(undefined)
  const traceparents = [...eventTraceparents]
  const links = linksTo(traceparents)
  return inSpan(
    'events deliver',
    {
      root: true,
      kind: SpanKind.PRODUCER,
      links,
      attributes: { 'livegate.events': traceparents.length, ...attributes },
    },
    run,
  )
}

/** The active trace's id, or undefined outside a recorded span. */
export function activeTraceId(): string | undefined {
  if (!active) return undefined
  const spanContext = trace.getActiveSpan()?.spanContext()
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext.traceId : undefined
}

function spanOptions(options: SpanOptions) {
  return {
    ...(options.attributes ? { attributes: options.attributes } : {}),
    ...(options.kind !== undefined ? { kind: options.kind } : {}),
    ...(options.links && options.links.length > 0 ? { links: options.links } : {}),
    ...(options.startTime ? { startTime: options.startTime } : {}),
  }
}

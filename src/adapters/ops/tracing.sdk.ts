import type { FastifyInstance, FastifyRequest } from 'fastify'
import { context, propagation, trace } from '@opentelemetry/api'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node'
import { ATTR_HTTP_ROUTE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import type { Config } from '../../config/config.schema.js'
import { setTracingActive } from '../../work/tracing.spans.js'

/**
 * The OpenTelemetry SDK of a gateway process, loaded (by a dynamic import in the assembly) only
 * when tracing is on: a tracer provider registered as the process's global one, with the
 * AsyncLocalStorage context manager and the W3C `traceparent` propagator, and spans sent over
 * OTLP/HTTP (JSON bodies) in batches. HTTP server spans come from `@fastify/otel`, used as a plain
 * Fastify plugin: no module patching, no other instrumentation.
 */

/** What a running SDK offers the assembly. */
export interface Tracing {
  /** Registers the request spans on the server; before any route, so every route is covered. */
  instrument(app: FastifyInstance): Promise<void>
  /** Sends what is buffered and unregisters the globals; the gateway stops it last. */
  shutdown(): Promise<void>
}

/** How the SDK is started. */
export interface TracingOptions {
  /** Where spans go instead of OTLP, each as it ends (tests read an in-memory exporter). */
  exporter?: SpanExporter
  version?: string
}

// Probes and scrapes answer many times a minute and say nothing about a request's way.
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics'])

/** Starts the SDK; the caller has checked `config.tracing.enabled`. */
export function startTracing(config: Pick<Config, 'tracing'>, options: TracingOptions = {}): Tracing {
  const exporter = options.exporter ?? new OTLPTraceExporter({ url: config.tracing.endpoint })
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: config.tracing.serviceName,
      ...(options.version ? { [ATTR_SERVICE_VERSION]: options.version } : {}),
      'process.pid': process.pid,
    }),
    // An exporter handed in is read by a test at once; OTLP goes in batches, off the request's way.
    spanProcessors: [options.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  })
  // W3C `traceparent`/`tracestate` only: livegate reads and writes no baggage.
  provider.register({ propagator: new W3CTraceContextPropagator() })
  setTracingActive(true, options.version)
  const otel = new FastifyOtelInstrumentation({
    // Hook and handler spans would double every request's spans for nothing an operator reads;
    // the route's own steps (verdict, commit, operation) are spans of ours, children of this one.
    instrumentHooks: false,
    instrumentHandler: false,
    ignorePaths: (route: { url: string }) => UNTRACED_PATHS.has(route.url),
    // The semantic conventions' name for an HTTP server span: the method and the route.
    requestHook: (span, request: FastifyRequest) => {
      const route = request.routeOptions.url
      span.updateName(route ? `${request.method} ${route}` : request.method)
      if (route) span.setAttribute(ATTR_HTTP_ROUTE, route)
    },
  })
  otel.setTracerProvider(provider)
  return {
    async instrument(app) {
      await app.register(otel.plugin())
    },
    async shutdown() {
      setTracingActive(false)
      otel.disable()
      await provider.shutdown().catch(() => {})
      // Another gateway in this process (tests) may register its own provider afterwards.
      trace.disable()
      context.disable()
      propagation.disable()
    },
  }
}

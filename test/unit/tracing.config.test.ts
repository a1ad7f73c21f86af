import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config/index.js'

const tracing = (env: Record<string, string>, value: Record<string, unknown> = {}) => loadConfig({ env, value }).tracing

describe('tracing: turned on and off as the OpenTelemetry SDKs read their variables', () => {
  it('is off by default, and on with a setting', () => {
    expect(tracing({})).toEqual({
      enabled: false,
      endpoint: 'http://localhost:4318/v1/traces',
      serviceName: 'livegate',
    })
    expect(
      tracing({}, { tracing: { enabled: true, endpoint: 'http://collector:4318/v1/traces', serviceName: 'gw' } }),
    ).toEqual({
      enabled: true,
      endpoint: 'http://collector:4318/v1/traces',
      serviceName: 'gw',
    })
  })

  it('is on with an endpoint: the base URL gets /v1/traces, the traces URL is used as given and wins', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({
      enabled: true,
      endpoint: 'http://collector:4318/v1/traces',
    })
    expect(
      tracing({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://other:9999/custom',
      }),
    ).toMatchObject({
      enabled: true,
      endpoint: 'http://other:9999/custom',
    })
    expect(tracing({ OTEL_SERVICE_NAME: 'edge-gw' })).toMatchObject({ enabled: false, serviceName: 'edge-gw' })
  })

  it('follows OTEL_TRACES_EXPORTER, and OTEL_SDK_DISABLED turns it off whatever else says on', () => {
    expect(tracing({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({
      enabled: true,
      endpoint: 'http://localhost:4318/v1/traces',
    })
    expect(
      tracing({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    ).toMatchObject({ enabled: false })
    expect(
      tracing({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' }, { tracing: { enabled: true } }),
    ).toMatchObject({ enabled: false })
    expect(tracing({ OTEL_SDK_DISABLED: 'false' }, { tracing: { enabled: true } })).toMatchObject({ enabled: true })
  })

  it('refuses what it cannot do, naming the variable', () => {
    expect(() => tracing({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(
      new ConfigError(
        'environment OTEL_TRACES_EXPORTER: "zipkin" is not supported: livegate exports over OTLP only ("otlp", ' +
          'or "none" for no tracing)',
      ),
    )
    expect(() => tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /^environment OTEL_EXPORTER_OTLP_PROTOCOL: livegate exports spans over OTLP\/HTTP only/,
    )
    expect(() => tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
      /^environment OTEL_EXPORTER_OTLP_ENDPOINT: /,
    )
    expect(() => tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'nope' })).toThrow(
      /^environment OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: /,
    )
  })
})

describe('tracing off costs nothing at load', () => {
  const src = fileURLToPath(new URL('../../src', import.meta.url))
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
    )
  // Static imports that load code (not `import type`), by module name.
  const loads = (text: string) =>
    [...text.matchAll(/^import\s+(?!type\s)[^'"]*from\s+'([^']+)'/gm)].map((match) => match[1] as string)

  it(
    'loads the SDK, the exporter and @fastify/otel only from ' + 'tracing.sdk.ts, which only a dynamic import reaches',
    () => {
      const sdkPackages = /^(@fastify\/otel|@opentelemetry\/(?!api$).+)$/
      const offenders: string[] = []
      for (const file of files(src)) {
        const name = relative(src, file)
        const imported = loads(readFileSync(file, 'utf8'))
        if (name !== join('adapters', 'ops', 'tracing.sdk.ts') && imported.some((module) => sdkPackages.test(module)))
          offenders.push(name)
        if (imported.some((module) => module.endsWith('/tracing.sdk.js'))) offenders.push(name)
      }
      expect(offenders).toEqual([])
      expect(readFileSync(join(src, 'gateway.assembly.ts'), 'utf8')).toContain(
        "await import('./adapters/ops/tracing.sdk.js')",
      )
    },
  )
})

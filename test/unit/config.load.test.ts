import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config/index.js'
import { retiredSettingWarnings } from '../../src/config/retired.settings.js'

const file = (content: string) => {
  const path = join(mkdtempSync(join(tmpdir(), 'livegate-config-')), 'livegate.json')
  writeFileSync(path, content)
  return path
}

describe('loadConfig', () => {
  it('gives every key a default: the embedded database on loopback, port 4000', () => {
    const config = loadConfig({ env: {} })
    expect(config).toMatchObject({
      port: 4000,
      host: '127.0.0.1',
      database: { dataDir: './data' },
      services: [],
      ingest: { bodyLimit: 65536, timestampToleranceSeconds: 300, signatureHeaderPrefixes: ['svc', 'xvs'] },
    })
    expect(config.database.url).toBeUndefined()
  })

  it('reads the file and lets the environment override it', () => {
    const path = file(
      JSON.stringify({
        port: 5000,
        host: '0.0.0.0',
        database: { url: 'postgres://a@b/c' },
        services: [{ serviceCode: 'TESTING', secrets: ['abc'], baseUrl: 'http://upstream.example' }],
      }),
    )
    const config = loadConfig({ file: path, env: { PORT: '6000', HOST: '::1', DATABASE_URL: 'postgres://x@y/z' } })
    expect(config).toMatchObject({ port: 6000, host: '::1', database: { url: 'postgres://x@y/z' } })
    expect(config.services[0]).toEqual({
      serviceCode: 'TESTING',
      secrets: ['abc'],
      verify: 'enforce',
      baseUrl: 'http://upstream.example',
    })
  })

  it('reads the pooler, the direct URL and the replicas from the file or DATABASE_DIRECT_URL, DATABASE_READ_URLS', () => {
    const fromFile = loadConfig({
      env: {},
      value: {
        database: {
          url: 'postgres://l@pgbouncer:6432/l',
          directUrl: 'postgres://l@primary/l',
          readUrls: ['postgres://l@replica-1/l'],
          maxReplicaLagMs: 500,
        },
      },
    })
    expect(fromFile.database).toMatchObject({
      url: 'postgres://l@pgbouncer:6432/l',
      directUrl: 'postgres://l@primary/l',
      readUrls: ['postgres://l@replica-1/l'],
      maxReplicaLagMs: 500,
    })
    const fromEnv = loadConfig({
      env: {
        DATABASE_URL: 'postgres://l@pgbouncer:6432/l',
        DATABASE_DIRECT_URL: 'postgres://l@primary/l',
        DATABASE_READ_URLS: 'postgres://l@replica-1/l, postgres://l@replica-2/l',
      },
    })
    expect(fromEnv.database).toMatchObject({
      directUrl: 'postgres://l@primary/l',
      readUrls: ['postgres://l@replica-1/l', 'postgres://l@replica-2/l'],
    })
    expect(() => loadConfig({ env: { DATABASE_READ_URLS: 'mysql://x', DATABASE_URL: 'postgres://a@b/c' } })).toThrow(
      /environment DATABASE_READ_URLS.*postgres:\/\//,
    )
    expect(() => loadConfig({ env: { DATABASE_DIRECT_URL: 'postgres://l@primary/l' } })).toThrow(/need url/)
  })

  it('resolves a secret named by an environment variable, so the file holds none', () => {
    const config = loadConfig({
      env: { TESTING_SECRET: 's3cret' },
      value: { services: [{ serviceCode: 'TESTING', secrets: [{ env: 'TESTING_SECRET' }] }] },
    })
    expect(config.services[0]?.secrets).toEqual(['s3cret'])
  })

  it.each([
    ['{ "port": "80" ', /not valid JSON/],
    ['[]', /must hold a JSON object/],
    ['{ "prot": 80 }', /\(top level\): unknown key "prot"/],
    ['{ "port": 70000 }', /port: /],
    ['{ "services": [{ "serviceCode": "A", "secrets": ["x"], "verify": "maybe" }] }', /services\[0\]\.verify: /],
    ['{ "services": [{ "serviceCode": "A" }] }', /services\[0\]\.secrets: needs at least one secret/],
    [
      '{ "services": [{ "serviceCode": "A", "secrets": ["x"] }, { "serviceCode": "A", "secrets": ["y"] }] }',
      /services\[1\]\.serviceCode: "A" is configured twice/,
    ],
    [
      '{ "services": [{ "serviceCode": "A", "secrets": [{ "env": "NOPE" }] }] }',
      /services\[0\]\.secrets\[0\]: environment variable NOPE is not set/,
    ],
    ['{ "database": { "url": "mysql://x" } }', /database\.url: must be a postgres/],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "task.mood" }] } }',
      /^config file .*: alerts\.rules\[0\]\.when: Invalid option/,
    ],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "task.health", "is": ["SLEEPY"] }] } }',
      /alerts\.rules\[0\]\.is\[0\]: Invalid option/,
    ],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "upstream.stale", "below": 3 }] } }',
      /alerts\.rules\[0\]\.below: "upstream\.stale" takes no threshold/,
    ],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "service.callbacksMissing", "below": 3 }] } }',
      /alerts\.rules\[0\]\.below: "service\.callbacksMissing" takes only "above"/,
    ],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "task.viewers" }] } }',
      /alerts\.rules\[0\]\.below: "task\.viewers" needs exactly one of "below", "above"/,
    ],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "upstream.stale" }, { "name": "a", "when": ' +
        '"upstream.stale" }] } }',
      /alerts\.rules\[1\]\.name: "a" is configured twice/,
    ],
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "upstream.stale", "for": "soon" }] } }',
      /alerts\.rules\[0\]\.for: /,
    ],
  ])('names the key of a bad file: %s', (content, message) => {
    const path = file(content)
    expect(() => loadConfig({ file: path, env: {} })).toThrowError(ConfigError)
    expect(() => loadConfig({ file: path, env: {} })).toThrowError(message)
  })

  it.each([
    // A required key misspelt: the key that was there, and the one meant.
    [
      '{ "services": [{ "servicecode": "TESTING", "secrets": ["x"] }] }',
      'services[0].serviceCode: missing, and services[0] has "servicecode": did you mean "serviceCode"?',
    ],
    // Unknown keys, at any depth, with the known key they resemble (case, a slip, two letters swapped).
    ['{ "prot": 80 }', '(top level): unknown key "prot": did you mean "port"?'],
    ['{ "ingest": { "bodylimit": 5 } }', 'ingest: unknown key "bodylimit": did you mean "bodyLimit"?'],
    ['{ "webhooks": { "endpoint": [] } }', 'webhooks: unknown key "endpoint": did you mean "endpoints"?'],
    [
      '{ "services": [{ "serviceCode": "A", "secrets": [{ "evn": "X" }] }] }',
      'services[0].secrets[0].env: missing, and services[0].secrets[0] has "evn": did you mean "env"?',
    ],
    [
      '{ "apiKeys": [{ "name": "a", "key": "k", "serviceCodes": ["*"], "cna": [] }] }',
      'apiKeys[0]: unknown key "cna": did you mean "can"?',
    ],
    ['{ "zzz": 1 }', '(top level): unknown key "zzz"'],
    // JSON syntax: the line and column, counted from 1, on every Node.
    [
      '{\n  "port": 4000\n  "host": "x"\n}',
      "not valid JSON at line 3, column 3: Expected ',' or '}' after property value",
    ],
    [
      '{\n  "services": [\n    { "serviceCode": "A", "secrets": [abc] }\n  ]\n}',
      "not valid JSON at line 3, column 39: Unexpected token 'a'",
    ],
    ['{ "port": 4000', 'not valid JSON at line 1, column 15: '],
    // A required key left out says "missing" and what it wants, not zod's "received undefined".
    ['{ "services": [{ "secrets": ["x"] }] }', 'services[0].serviceCode: missing (a string)'],
    ['{ "alerts": { "rules": [{ "when": "upstream.stale" }] } }', 'alerts.rules[0].name: missing (a string)'],
    // A duration in words shows the format it takes, not "Invalid input".
    [
      '{ "alerts": { "rules": [{ "name": "a", "when": "upstream.stale", "for": "20 seconds" }] } }',
      'alerts.rules[0].for: "20 seconds" is not a duration: write milliseconds or a number with a unit, as "20s", "2m"',
    ],
  ])('says what was meant, in one plain line: %s', (content, message) => {
    const path = file(content)
    let said = ''
    try {
      loadConfig({ file: path, env: {} })
    } catch (error) {
      said = (error as Error).message
    }
    expect(said.startsWith(`config file ${path}: ${message}`), said).toBe(true)
    expect(said).not.toContain('\n')
  })

  it("reads alert rules with their defaults: for 0, clearFor the rule's for, every code, WARNING", () => {
    const config = loadConfig({
      env: {},
      value: { alerts: { rules: [{ name: 'stale', when: 'upstream.stale', for: '1m' }] } },
    })
    expect(config.alerts.rules).toEqual([
      { name: 'stale', when: 'upstream.stale', for: 60_000, serviceCodes: '*', severity: 'WARNING' },
    ])
    expect(loadConfig({ env: {} }).alerts.rules).toEqual([])
  })

  it('names a missing file and a bad PORT', () => {
    expect(() => loadConfig({ file: '/nonexistent/livegate.json', env: {} })).toThrowError(/cannot be read \(ENOENT\)/)
    expect(() => loadConfig({ env: { PORT: 'eighty' } })).toThrowError(/environment PORT/)
  })

  it('loads a file that still sets a retired setting, with one line naming what took its place', () => {
    const config = loadConfig({ value: { upstream: { cacheMs: 2000 } }, env: {} })
    expect(retiredSettingWarnings(config)).toEqual([
      expect.stringMatching(/^upstream\.cacheMs is no longer used .*upstream\.pollIntervalMs.*remove it/),
    ])
    expect(retiredSettingWarnings(loadConfig({ env: {} }))).toEqual([])
  })

  it("loads the README's first configuration as it is, so it can be copied", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const example = /```json\n([\s\S]*?)```/.exec(readme)?.[1]
    expect(example, 'the README shows a configuration').toBeDefined()
    const config = loadConfig({ file: file(example as string), env: {} })
    expect(config.services[0]).toMatchObject({ serviceCode: 'TESTING', verify: 'enforce' })
  })
})

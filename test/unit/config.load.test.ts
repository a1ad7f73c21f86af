import { mkdtempSync, writeFileSync } from 'node:fs'
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
      JSON.stringify({ port: 5000, host: '0.0.0.0', database: { url: 'postgres://a@b/c' }, services: [{ serviceCode: 'TESTING', secrets: ['abc'], baseUrl: 'http://upstream.example' }] }),
    )
    const config = loadConfig({ file: path, env: { PORT: '6000', HOST: '::1', DATABASE_URL: 'postgres://x@y/z' } })
    expect(config).toMatchObject({ port: 6000, host: '::1', database: { url: 'postgres://x@y/z' } })
    expect(config.services[0]).toEqual({ serviceCode: 'TESTING', secrets: ['abc'], verify: 'enforce', baseUrl: 'http://upstream.example' })
  })

  it('resolves a secret named by an environment variable, so the file holds none', () => {
    const config = loadConfig({ env: { TESTING_SECRET: 's3cret' }, value: { services: [{ serviceCode: 'TESTING', secrets: [{ env: 'TESTING_SECRET' }] }] } })
    expect(config.services[0]?.secrets).toEqual(['s3cret'])
  })

  it.each([
    ['{ "port": "80" ', /not valid JSON/],
    ['[]', /must hold a JSON object/],
    ['{ "prot": 80 }', /\(top level\): unknown key "prot"/],
    ['{ "port": 70000 }', /port: /],
    ['{ "services": [{ "serviceCode": "A", "secrets": ["x"], "verify": "maybe" }] }', /services\[0\]\.verify: /],
    ['{ "services": [{ "serviceCode": "A" }] }', /services\[0\]\.secrets: needs at least one secret/],
    ['{ "services": [{ "serviceCode": "A", "secrets": ["x"] }, { "serviceCode": "A", "secrets": ["y"] }] }', /services\[1\]\.serviceCode: "A" is configured twice/],
    ['{ "services": [{ "serviceCode": "A", "secrets": [{ "env": "NOPE" }] }] }', /services\[0\]\.secrets\[0\]: environment variable NOPE is not set/],
    ['{ "database": { "url": "mysql://x" } }', /database\.url: must be a postgres/],
  ])('names the key of a bad file: %s', (content, message) => {
    const path = file(content)
    expect(() => loadConfig({ file: path, env: {} })).toThrowError(ConfigError)
    expect(() => loadConfig({ file: path, env: {} })).toThrowError(message)
  })

  it('names a missing file and a bad PORT', () => {
    expect(() => loadConfig({ file: '/nonexistent/livegate.json', env: {} })).toThrowError(/cannot be read \(ENOENT\)/)
    expect(() => loadConfig({ env: { PORT: 'eighty' } })).toThrowError(/environment PORT/)
  })

  it('loads a file that still sets a retired setting, with one line naming what took its place', () => {
    const config = loadConfig({ value: { upstream: { cacheMs: 2000 } }, env: {} })
    expect(retiredSettingWarnings(config)).toEqual([expect.stringMatching(/^upstream\.cacheMs is no longer used .*upstream\.pollIntervalMs.*remove it/)])
    expect(retiredSettingWarnings(loadConfig({ env: {} }))).toEqual([])
  })
})

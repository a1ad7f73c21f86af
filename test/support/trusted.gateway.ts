import { join } from 'node:path'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { loadConfig } from '../../src/config/index.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { openTestDatabase, type TestDatabase } from './database.fixture.js'
import { deliverTo, TEST_CONFIG } from './gateway.fixture.js'
import { ROOT } from './livegate.process.js'

/** The manifest livegate ships for its own sample operations (graphql-codegen's client preset). */
export const TRUSTED_MANIFEST = join(ROOT, 'schema/client/trusted/persisted-documents.json')

/** A gateway given the shipped manifest and these API keys, on a database of its own, with one live task of TESTING. */
export async function startTrustedGateway(
  apiKeys: Array<Record<string, unknown>>,
  taskId: string,
  limits: Record<string, number> = {},
): Promise<{ db: TestDatabase; gateway: Gateway; close(): Promise<void> }> {
  const db = await openTestDatabase()
  const graphql = { ...limits, trustedDocuments: [TRUSTED_MANIFEST] }
  const gateway = await startGateway(loadConfig({ env: {}, value: { ...TEST_CONFIG, apiKeys, graphql } }), {
    database: db.database,
  })
  await deliverTo(gateway, sampleCallbacks(taskId).liveStart as Record<string, string>)
  return {
    db,
    gateway,
    async close() {
      await gateway.close()
      await db.drop()
    },
  }
}

/** The keys of the transport table's gateway: one reads every code, one TESTING, one trusted documents only. */
export const TABLE_KEYS = { all: 'key-all', tenant: 'key-tenant', trusted: 'key-trusted' }

/**
 * The gateway the transport table and the prepared route are held on: {@link TABLE_KEYS}, small
 * depth, alias and cost limits, a live task of TESTING (`mine`) and one of another code (`theirs`, OPEN).
 */
export async function startTableGateway(): Promise<{ db: TestDatabase; gateway: Gateway; close(): Promise<void> }> {
  const keys = [
    { name: 'all', key: TABLE_KEYS.all, serviceCodes: ['*'] },
    { name: 'tenant', key: TABLE_KEYS.tenant, serviceCodes: ['TESTING'] },
    { name: 'trusted', key: TABLE_KEYS.trusted, serviceCodes: ['TESTING'], operations: 'trusted' },
  ]
  const started = await startTrustedGateway(keys, 'mine', { maxDepth: 8, maxAliases: 3, maxCost: 500 })
  await deliverTo(started.gateway, {
    ...(sampleCallbacks('theirs').liveStart as Record<string, string>),
    service_code: 'OPEN',
  })
  return started
}

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
): Promise<{ db: TestDatabase; gateway: Gateway; close(): Promise<void> }> {
  const db = await openTestDatabase()
  const gateway = await startGateway(
    loadConfig({ env: {}, value: { ...TEST_CONFIG, apiKeys, graphql: { trustedDocuments: [TRUSTED_MANIFEST] } } }),
    { database: db.database },
  )
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

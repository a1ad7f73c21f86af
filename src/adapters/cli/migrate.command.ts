import { openDatabase } from '../../storage/database.client.js'
import { backfillLegacyValues } from '../../storage/legacy.backfill.js'
import type { Command } from './command.model.js'

/** `livegate migrate`: applies the committed migrations and exits. */
export const migrateCommand: Command = async (_args, config, io, context) => {
  const database = await openDatabase({
    url: config.database.url,
    directUrl: config.database.directUrl,
    dataDir: config.database.dataDir,
    urlOrigin: context.databaseUrlOrigin,
    command: 'migrate',
  })
  try {
    await database.migrate()
    await backfillLegacyValues(database.db)
    io.out(`livegate: database migrated (${database.driver})`)
    return 0
  } finally {
    await database.close()
  }
}

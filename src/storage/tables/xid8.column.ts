import { sql } from 'drizzle-orm'
import { customType } from 'drizzle-orm/pg-core'

/**
 * A 64-bit transaction id (`xid8`), read as its decimal text: it may pass 2^53. A row's writing
 * transaction is what orders the log (see notification.queries.ts, "positions").
 */
export const xid8 = customType<{ data: string; driverData: string }>({
  dataType: () => 'xid8',
  fromDriver: (value) => String(value),
})

/** The writing transaction's id, as a column default: set by the database, never by a client. */
export const CURRENT_XACT_ID = sql`pg_current_xact_id()`

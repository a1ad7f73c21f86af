import { pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * Named leases shared by every gateway instance on one database: a job only one instance may
 * run at a time (polling one service code's task_list) is run by the row's `holder` until
 * `expires_at`, by the database's clock, so the instances' clocks never have to agree.
 */
export const leases = pgTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/** A lease row as read. */
export type LeaseRow = typeof leases.$inferSelect

import { customType } from 'drizzle-orm/pg-core'

/**
 * Raw bytes, kept exactly as received: a request body may hold bytes that text columns refuse
 * (NUL, invalid UTF-8). postgres.js reads bytea as a Buffer, PGlite as a Uint8Array; both are
 * given back as a Buffer.
 */
export const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  toDriver: (value) => value,
  fromDriver: (value) => (Buffer.isBuffer(value) ? value : Buffer.from(value)),
})

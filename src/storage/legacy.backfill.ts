import { and, asc, eq, gt, sql } from 'drizzle-orm'
import { parseCallback } from '../model/callback.parse.js'
import { sentFields } from '../model/callback.record.js'
import { parseTimestamp } from '../model/signature.verify.js'
import { callbacks, projections } from './tables/callback.table.js'
import type { Db } from './database.client.js'
import { jsonLiteral } from './tables/json.rows.js'

const MARKER = 'legacy-values'
const BATCH = 1000

/**
 * Gives the callbacks kept before typed values were stored (migration 0003) their values and
 * signed time, parsed once from the request as stored, then removes the migration's marker. A
 * database created since has no marker, and this costs it one lookup.
 */
export async function backfillLegacyValues(db: Db): Promise<number> {
  const [marker] = await db.select({ id: projections.id }).from(projections).where(eq(projections.name, MARKER))
  if (!marker) return 0
  let after = 0
  let total = 0
  for (;;) {
    const rows = await db
      .select({
        id: callbacks.id,
        method: callbacks.method,
        query: callbacks.query,
        body: callbacks.body,
        headers: callbacks.headers,
      })
      .from(callbacks)
      .where(and(gt(callbacks.id, after), sql`${callbacks.id} <= ${marker.id}`))
      .orderBy(asc(callbacks.id))
      .limit(BATCH)
    if (rows.length === 0) break
    const typed = rows.map((row) => {
      const parsed = parseCallback(sentFields(row))
      const header = Object.entries(row.headers).find(([name]) => name.endsWith('-timestamp'))?.[1]
      const reading = header === undefined ? undefined : parseTimestamp(header)
      return {
        id: row.id,
        values: parsed.ok ? parsed.callback.values : {},
        signed_at: reading?.ok ? new Date(reading.ms).toISOString() : null,
      }
    })
    await db.execute(
      sql`update ${callbacks} c set "values" = v."values", "signed_at" = v."signed_at" from
        jsonb_to_recordset(${jsonLiteral(typed)}) as v(id bigint, "values" jsonb, "signed_at" timestamptz) where c.id =
        v.id`,
    )
    total += rows.length
    after = (rows.at(-1) as { id: number }).id
  }
  await db.delete(projections).where(eq(projections.name, MARKER))
  return total
}

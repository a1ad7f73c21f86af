import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type Database, openDatabase, resultRows } from '../../src/storage/database.client.js'
import { PREPARED_TEXTS_MAX, PreparedTexts } from '../../src/storage/prepared.client.js'
import { describeOnServer, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

// src/storage/prepared.client.ts: on a server, a statement with parameters met a second time runs
// as a named prepared statement; a statement without parameters, or one met once, does not; a
// URL with ?prepare=false keeps every statement unnamed.
describeOnServer('prepared statements (postgres)', () => {
  let test: TestDatabase
  let one: Database
  beforeAll(async () => {
    test = await openTestDatabase()
    one = await openDatabase({ url: test.url as string, dataDir: '', maxConnections: 1 })
  })
  afterAll(async () => {
    await one?.close()
    await test?.drop()
  })

  const prepared = async (database: Database, marker: string) => {
    const rows = resultRows<{ statement: string }>(
      await database.db.execute(
        sql`select statement from pg_prepared_statements where statement like ${`%${marker}%`} and statement not like
          '%pg_prepared_statements%'`,
      ),
    )
    return rows.map((row) => row.statement)
  }

  it(
    'a statement with parameters runs prepared from its second time, inside a transaction too, and keeps its ' +
      'answers',
    async () => {
      const answers: unknown[] = []
      for (const n of [1, 2, 3])
        answers.push(resultRows(await one.db.execute(sql`select ${n}::int + 1 as twice_marker`))[0])
      expect(answers).toEqual([{ twice_marker: 2 }, { twice_marker: 3 }, { twice_marker: 4 }])
      await one.db.transaction(async (tx) => {
        for (const n of [1, 2]) await tx.execute(sql`select ${n}::int as in_tx_marker`)
      })
      expect(await prepared(one, 'twice_marker')).toHaveLength(1)
      expect(await prepared(one, 'in_tx_marker')).toHaveLength(1)
    },
  )

  it('a statement without parameters, or met once, stays unnamed', async () => {
    for (let n = 0; n < 3; n++) await one.db.execute(sql.raw(`select ${n} as literal_marker`))
    await one.db.execute(sql`select ${1}::int as once_marker`)
    expect(await prepared(one, 'literal_marker')).toEqual([])
    expect(await prepared(one, 'once_marker')).toEqual([])
  })

  it('?prepare=false keeps every statement unnamed', async () => {
    const url = new URL(test.url as string)
    url.searchParams.set('prepare', 'false')
    const off = await openDatabase({ url: url.toString(), dataDir: '', maxConnections: 1 })
    try {
      for (const n of [1, 2, 3]) await off.db.execute(sql`select ${n}::int as off_marker`)
      expect(await prepared(off, 'off_marker')).toEqual([])
    } finally {
      await off.close()
    }
  })
})

it(`prepares a text from its second time, at most ${PREPARED_TEXTS_MAX} texts, and never a long one`, () => {
  const texts = new PreparedTexts()
  expect([texts.prepare('a'), texts.prepare('a'), texts.prepare('a')]).toEqual([false, true, true])
  for (let n = 0; n < PREPARED_TEXTS_MAX + 10; n++) texts.prepare(`t${n}`), texts.prepare(`t${n}`)
  expect(texts.size).toBe(PREPARED_TEXTS_MAX)
  const long = 'x'.repeat(70_000)
  expect([texts.prepare(long), texts.prepare(long)]).toEqual([false, false])
})

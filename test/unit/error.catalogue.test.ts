import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { type CatalogueCode, type CatalogueEntry, errorCatalogue } from '../../src/model/error.catalogue.js'

// The guide's tables of codes are checked against the one catalogue: a code added to either
// without the other fails here. The callback answers are in docs/callbacks.md, the GraphQL codes
// in docs/querying.md, the websocket close codes in docs/realtime.md.

const page = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8')
const entries = Object.entries(errorCatalogue) as Array<[CatalogueCode, CatalogueEntry]>

/** The rows of the page's table whose header line starts with `header`: each row's cells. */
function tableRows(name: string, header: string): string[][] {
  const lines = page(name).split('\n')
  const start = lines.findIndex((line) => line.startsWith(header))
  expect(start, `docs/${name} has a table headed "${header}"`).toBeGreaterThanOrEqual(0)
  const rows: string[][] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
  }
  return rows
}

/** The backquoted codes of a cell. */
const codesIn = (cell: string) => [...cell.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1] as string)

describe('the catalogue of codes', () => {
  it('has unique ret values and close numbers', () => {
    const rets = entries.flatMap(([, entry]) => (entry.on === 'http' ? [entry.ret] : []))
    expect(new Set(rets).size).toBe(rets.length)
    const closes = entries.flatMap(([, entry]) => (entry.on === 'websocket' ? [entry.close] : []))
    expect(new Set(closes).size).toBe(closes.length)
    for (const [code, entry] of entries) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/)
      expect(entry.message.length, code).toBeGreaterThan(0)
      if (entry.on === 'http') expect(Math.floor(entry.ret / 100), code).toBe(entry.status)
    }
  })

  it("is docs/callbacks.md's table of callback answers, row for row", () => {
    const rows = tableRows('callbacks.md', '| HTTP | `code` | `ret` |').map(([status, code, ret]) => [
      Number(status),
      codesIn(code ?? '')[0],
      Number(ret),
    ])
    const http = entries.flatMap(([code, entry]) => (entry.on === 'http' ? [[entry.status, code, entry.ret]] : []))
    expect(rows.sort()).toEqual(http.sort())
  })

  it("is docs/querying.md's table of GraphQL codes, row for row", () => {
    const rows = tableRows('querying.md', '| HTTP | `extensions.code` |').flatMap(([status, codes]) =>
      codesIn(codes ?? '').map((code) => [Number(status), code]),
    )
    const graphql = entries.flatMap(([code, entry]) => (entry.on === 'graphql' ? [[entry.status, code]] : []))
    expect(rows.sort()).toEqual(graphql.sort())
  })

  it('names every websocket close code docs/realtime.md names, and no other', () => {
    const paragraph =
      page('realtime.md')
        .split('\n\n')
        .find((part) => part.startsWith('**Close codes.**')) ?? ''
    const named = [...paragraph.matchAll(/`(\d{4})`/g)].map((match) => Number(match[1]))
    const closes = entries.flatMap(([, entry]) => (entry.on === 'websocket' ? [entry.close] : []))
    expect(named.sort()).toEqual(closes.sort())
  })
})

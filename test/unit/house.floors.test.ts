import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// The house is written once, in src/README.md's table of floors, and held to the code here: every
// source file lives in a room of the table, imports only from rooms on lower floors (or its own
// room), SQL is written only in storage, and files keep to one job (`<noun>.<role>.ts`, at most
// 300 lines). A room moved or added without the table, or an import that runs back up, fails.

const SRC = fileURLToPath(new URL('../../src', import.meta.url))
const MAP = readFileSync(join(SRC, 'README.md'), 'utf8')

interface Room {
  path: string
  floor: number
}

/** The rooms of the floors table: `| floor | rooms | … |`, each room a backquoted path under src/. */
function floors(): Room[] {
  const lines = MAP.split('\n')
  const start = lines.findIndex((line) => /^\|\s*floor\s*\|\s*rooms?\s*\|/.test(line))
  expect(start, 'src/README.md has a table headed "| floor | rooms |"').toBeGreaterThanOrEqual(0)
  const rooms: Room[] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    const [floor, paths] = line
      .split('|')
      .slice(1, 3)
      .map((cell) => cell.trim())
    for (const match of (paths ?? '').matchAll(/`([^`]+)`/g))
      rooms.push({ path: (match[1] as string).replace(/\/$/, ''), floor: Number(floor) })
  }
  return rooms
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.(ts|mts|mjs|js)$/.test(name) ? [relative(SRC, path)] : []
  })
}

const rooms = floors()
const files = sources(SRC)
/** The room a file lives in: the longest room path that holds it. */
const roomOf = (file: string): Room | undefined =>
  rooms
    .filter((room) => file === room.path || file.startsWith(`${room.path}/`))
    .sort((a, b) => b.path.length - a.path.length)[0]

/** The files of this tree a file imports (static and dynamic imports with a relative path). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8')
  return [
    ...text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^'"\n]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g,
    ),
  ]
    .map((match) => (match[1] ?? match[2]) as string)
    .map((target) => normalize(join(dirname(file), target)).replace(/\.js$/, '.ts'))
    .filter((target) => !target.startsWith('..'))
}

describe("the house: src/README.md's floors, held to the code", () => {
  it('names every room once, and every room it names exists', () => {
    expect(rooms.length).toBeGreaterThan(5)
    expect(new Set(rooms.map((room) => room.path)).size).toBe(rooms.length)
    for (const room of rooms)
      expect(
        files.some((file) => file === room.path || file.startsWith(`${room.path}/`)),
        room.path,
      ).toBe(true)
  })

  it('puts every source file in a room', () => {
    expect(files.filter((file) => !roomOf(file))).toEqual([])
  })

  it('has no import running back up, and none across rooms of one floor', () => {
    const wrong: string[] = []
    // The imports are read at all: a pattern that read none would hold nothing.
    expect(files.flatMap(importsOf).length).toBeGreaterThan(500)
    for (const file of files) {
      const from = roomOf(file) as Room
      for (const target of importsOf(file)) {
        const to = roomOf(target)
        if (!to || to === from) continue
        if (to.floor >= from.floor) wrong.push(`${file} (floor ${from.floor}) imports ${target} (floor ${to.floor})`)
      }
    }
    expect(wrong).toEqual([])
  })

  it('writes SQL only in storage', () => {
    const outside = files.filter(
      (file) =>
        !file.startsWith('storage/') && /from ['"]drizzle-orm|\bsql`/.test(readFileSync(join(SRC, file), 'utf8')),
    )
    expect(outside).toEqual([])
  })

  it('keeps each file to one job: named <noun>.<role>.ts, at most 300 lines', () => {
    const named = files.filter(
      (file) =>
        file.endsWith('.ts') &&
        !/(^|\/)(main|index)\.ts$/.test(file) &&
        !/(^|\/)[a-z0-9-]+\.[a-z0-9-]+(\.d)?\.ts$/.test(file),
    )
    expect(named).toEqual([])
    const long = files
      .filter((file) => file.endsWith('.ts'))
      .filter((file) => readFileSync(join(SRC, file), 'utf8').split('\n').length > 301)
    expect(long).toEqual([])
  })

  it('keeps every room under 2,000 lines of its own', () => {
    const lines = new Map<string, number>()
    for (const file of files) {
      const room = (roomOf(file) as Room).path
      lines.set(room, (lines.get(room) ?? 0) + readFileSync(join(SRC, file), 'utf8').split('\n').length)
    }
    expect([...lines].filter(([, count]) => count > 2000)).toEqual([])
  })
})

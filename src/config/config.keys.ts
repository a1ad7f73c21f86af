import type { z } from 'zod'

/**
 * The words a configuration error needs beyond the schema's own: which keys an object of the
 * schema may hold, which of them a misspelt key was meant to be, and where in the file's text a
 * JSON syntax error is. A newcomer's typo (`"servicecode"`, `"prot"`) is named with what was
 * meant, in one plain line.
 */

type Def = {
  type: string
  innerType?: z.ZodType
  element?: z.ZodType
  in?: z.ZodType
  shape?: Record<string, z.ZodType>
  options?: z.ZodType[]
}

const defOf = (schema: z.ZodType) => (schema as unknown as { def: Def }).def

/** The object schemas a value at `path` may be (a union may offer several). */
function objectsAt(schema: z.ZodType, path: readonly PropertyKey[]): Array<Record<string, z.ZodType>> {
  const def = defOf(schema)
  switch (def.type) {
    case 'default':
    case 'optional':
    case 'nullable':
    case 'prefault':
      return objectsAt(def.innerType as z.ZodType, path)
    case 'pipe':
      return objectsAt(def.in as z.ZodType, path)
    case 'union':
      return (def.options ?? []).flatMap((option) => objectsAt(option, path))
    case 'array':
      return typeof path[0] === 'number' ? objectsAt(def.element as z.ZodType, path.slice(1)) : []
    case 'object': {
      const shape = def.shape ?? {}
      if (path.length === 0) return [shape]
      const next = typeof path[0] === 'string' ? shape[path[0]] : undefined
      return next ? objectsAt(next, path.slice(1)) : []
    }
    default:
      return []
  }
}

/** The keys the schema allows in the object at `path` (`[]` for the top level). */
export function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  return [...new Set(objectsAt(schema, path).flatMap((shape) => Object.keys(shape)))]
}

/** How many edits (a character added, dropped, changed, or two swapped) turn one word into the other. */
function distance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, index) => index)]
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    const above = rows[i - 1] as number[]
    for (let j = 1; j <= b.length; j++) {
      let edits = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        edits = Math.min(edits, ((rows[i - 2] as number[])[j - 2] as number) + 1)
      row[j] = edits
    }
    rows.push(row)
  }
  return (rows[a.length] as number[])[b.length] as number
}

/**
 * The known key a misspelt one was meant to be: the same letters in another case, or within a
 * third of its length in edits (at most 3); undefined when nothing is that close.
 */
export function closestKey(word: string, known: readonly string[]): string | undefined {
  const sameCase = known.find((key) => key.toLowerCase() === word.toLowerCase())
  if (sameCase) return sameCase
  let best: { key: string; edits: number } | undefined
  for (const key of known) {
    const edits = distance(word.toLowerCase(), key.toLowerCase())
    if (edits <= Math.min(3, Math.floor(Math.max(word.length, 3) / 3)) && (!best || edits < best.edits))
      best = { key, edits }
  }
  return best?.key
}

/** Where JSON.parse stopped: its position, or the longest beginning of the text that still parses on. */
function errorOffset(text: string, message: string): number {
  const position = /at position (\d+)/.exec(message)?.[1]
  if (position !== undefined) return Number(position)
  if (/end of JSON input/.test(message)) return text.length
  // Node 20 names an unexpected token without its place: a beginning of the text that stops only
  // at its own end is sound, and the first that does not ends at the bad character.
  const sound = (length: number) => {
    try {
      JSON.parse(text.slice(0, length))
      return true
    } catch (error) {
      const message = (error as Error).message
      const at = /at position (\d+)/.exec(message)?.[1]
      return /end of JSON input/.test(message) || (at !== undefined && Number(at) >= length)
    }
  }
  let [low, high] = [0, text.length]
  while (high - low > 1) {
    const middle = (low + high) >> 1
    if (sound(middle)) low = middle
    else high = middle
  }
  return low
}

/**
 * A JSON syntax error as "line L, column C: what" (both from 1). Node's message gives a position,
 * a line and column (from Node 22), or neither: the place is counted here, the same on every Node.
 */
export function jsonErrorPlace(text: string, error: Error): string {
  const before = text.slice(0, errorOffset(text, error.message)).split('\n')
  const column = (before.at(-1)?.length ?? 0) + 1
  const what = error.message
    .replace(/\s*\(line \d+ column \d+\)/, '')
    .replace(/ in JSON at position \d+/, '')
    .replace(/, (\.\.\.)?"[\s\S]*"(\.\.\.)? is not valid JSON$/, '')
    .replace(/^Unexpected end of JSON input$/, 'the text ends before the JSON does')
    .replace(/\s*\n\s*/g, ' ')
  return `line ${before.length}, column ${column}: ${what}`
}

import type { LeftOutReason } from '../../model/list-files.schema.js'

/** What an answer held that the catalogue cannot, counted: a whole `file`, or one `value` of a file kept without it. */
export interface LeftOut {
  what: 'file' | 'value'
  field: string
  reason: LeftOutReason
  count: number
}

/** Tallies what was left out, by what, field and reason. */
export class LeftOutTally {
  private readonly counts = new Map<string, LeftOut>()

  add(what: LeftOut['what'], field: string, reason: LeftOutReason, count = 1): void {
    const key = `${what}/${field}/${reason}`
    const known = this.counts.get(key)
    if (known) known.count += count
    else this.counts.set(key, { what, field, reason, count })
  }

  list(): LeftOut[] {
    return [...this.counts.values()]
  }
}

/** What was left out, in words: `2 files (file_name: NUL), 1 value (access_cnt: OUT_OF_RANGE)`. */
export function describeLeftOut(leftOut: readonly LeftOut[]): string {
  return leftOut
    .map((part) => `${part.count} ${part.what}${part.count === 1 ? '' : 's'} (${part.field}: ${part.reason})`)
    .join(', ')
}

/**
 * A callback's place in the log: the id of the transaction that wrote it (`xid8`, as decimal
 * text), then its row id. Ids alone are handed out before commit, so two writers may commit them
 * out of order; ordered by writing transaction, and read only below the oldest transaction still
 * running, the log only ever grows at its end, which is what makes a cursor exact.
 */
export interface LogPosition {
  xid: string
  id: number
}

/** Before every callback. */
export const LOG_START: LogPosition = { xid: '0', id: 0 }

/** Orders positions: negative when `a` comes first. */
export function comparePositions(a: LogPosition, b: LogPosition): number {
  if (a.xid !== b.xid) {
    // Decimal texts without leading zeros: the longer is the larger, else compare as text.
    if (a.xid.length !== b.xid.length) return a.xid.length < b.xid.length ? -1 : 1
    return a.xid < b.xid ? -1 : 1
  }
  return a.id - b.id
}

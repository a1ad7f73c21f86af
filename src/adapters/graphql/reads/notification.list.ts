import type { Db } from '../../../storage/database.client.js'
import type {
  NotificationCriteria,
  NotificationPageRequest,
  NotificationRow,
} from '../../../storage/notification.queries.js'
import { horizonLook, notificationPageAt } from '../../../storage/notification-horizon.queries.js'
import { retrying } from '../../../work/wake.scheduler.js'

// How long a list waits for the transactions older than a matching callback to end: a bound against
// a transaction left open, far past a group commit's or a projection pass's few milliseconds.
const SETTLE_LIMIT_MS = 5000
// The first looks come fast (a group commit ends within milliseconds), then no closer than this.
const LOOK_AGAIN_MAX_MS = 50

/**
 * A list of notifications and its count, both below a horizon that has passed every matching
 * callback committed when the request came: a callback acknowledged before the request is then
 * on its page, whichever worker asks (see {@link horizonLook}). The wait is the one scheduler's
 * retry, bounded by SETTLE_LIMIT_MS; past it the list is read at the horizon it has.
 */
export async function notificationList(
  db: Db,
  criteria: NotificationCriteria,
  page: Omit<NotificationPageRequest, 'horizon'>,
): Promise<{ rows: NotificationRow[]; countAll: () => Promise<number> }> {
  const deadline = performance.now() + SETTLE_LIMIT_MS
  // The newest matching callback committed at the first look: those committed later need not be waited for.
  let pending: string | null | undefined
  const look = await retrying(
    () => horizonLook(db, criteria),
    ({ horizon, newest }, attempt) => {
      if (pending === undefined) pending = newest
      if (pending === null || BigInt(horizon) > BigInt(pending) || performance.now() >= deadline) return undefined
      return Math.min(2 ** attempt, LOOK_AGAIN_MAX_MS)
    },
  )
  return notificationPageAt(db, criteria, page, look.horizon)
}

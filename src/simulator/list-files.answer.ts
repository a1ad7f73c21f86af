/**
 * The simulated `management` function `list_files` (operations.md): the body is read as the cloud
 * reads it, and every value answered is typed as a key-value store writes it (`{"S": …}`,
 * `{"N": "…"}`). The simulator's refusals use its own `ret` values (task-list.server.ts).
 */

/** A file as the archive keeps it, before typing. */
export interface ListedFile {
  file_name: string
  /** Unix seconds. */
  created_at: number
  duration: string
  width: number
  height: number
  user_name: string
  description: string
  url: string
  location: string
  access_cnt: number
  zan_cnt: number
}

/** Every field `list_files` knows, and whether it is a number (`N`) or a text (`S`). */
export const LIST_FILES_FIELDS: Readonly<Record<keyof ListedFile, 'N' | 'S'>> = {
  file_name: 'S',
  created_at: 'N',
  duration: 'N',
  width: 'N',
  height: 'N',
  user_name: 'S',
  description: 'S',
  url: 'S',
  location: 'S',
  access_cnt: 'N',
  zan_cnt: 'N',
}

/** The most items one answer carries, whatever `limit` asks. */
export const LIST_FILES_MAX = 1000

/** The refusals of a management body, by the simulator's `ret` values. */
export interface ManagementRets {
  MISSING_PARAMETER: number
  UNKNOWN_FUNCTION: number
  BAD_PARAMETER: number
}

type TypedValue = { S: string } | { N: string }

/** The answer to a signed management body: `list_files` over `files`, or a refusal. */
export function answerManagement(body: string, files: readonly ListedFile[], rets: ManagementRets): object {
  let request: unknown
  try {
    request = JSON.parse(body)
  } catch {
    return { ret: rets.BAD_PARAMETER, msg: 'the body is not JSON' }
  }
  if (typeof request !== 'object' || request === null)
    return { ret: rets.BAD_PARAMETER, msg: 'the body is not an object' }
  const { function: name, params } = request as { function?: unknown; params?: unknown }
  if (typeof name !== 'string') return { ret: rets.MISSING_PARAMETER, msg: 'function is required' }
  if (name !== 'list_files') return { ret: rets.UNKNOWN_FUNCTION, msg: `no function ${name}` }
  const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>
  if (typeof p.fields !== 'string' || p.fields === '')
    return { ret: rets.MISSING_PARAMETER, msg: 'params.fields is required' }
  const fields = p.fields.split(',').map((field) => field.trim())
  const unknown = fields.find((field) => !(field in LIST_FILES_FIELDS))
  if (unknown !== undefined) return { ret: rets.BAD_PARAMETER, msg: `no field ${unknown}` }
  const limit = p.limit ?? 20
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)
    return { ret: rets.BAD_PARAMETER, msg: 'params.limit is a whole number above 0' }
  const orderAsc = p.order_asc ?? 0
  if (orderAsc !== 0 && orderAsc !== 1) return { ret: rets.BAD_PARAMETER, msg: 'params.order_asc is 0 or 1' }
  const sorted = [...files].sort((a, b) => (orderAsc === 1 ? a.created_at - b.created_at : b.created_at - a.created_at))
  const items = sorted
    .slice(0, Math.min(limit, LIST_FILES_MAX))
    .map((file) => typed(file, fields as Array<keyof ListedFile>))
  return { ret: 0, item_cnt: items.length, items }
}

function typed(file: ListedFile, fields: ReadonlyArray<keyof ListedFile>): Record<string, TypedValue> {
  const item: Record<string, TypedValue> = {}
  for (const field of fields) {
    const value = String(file[field])
    item[field] = LIST_FILES_FIELDS[field] === 'N' ? { N: value } : { S: value }
  }
  return item
}

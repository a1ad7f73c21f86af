import { inArray, type SQL, sql } from 'drizzle-orm'
import { KINDS, type ViewField } from '../../model/callback.kinds.js'
import { FINAL } from '../log.kernel.js'
import { ownedBy } from '../tables/task.owner.js'
import { callbacks } from '../tables/callback.table.js'
import { dateTime, float, P, safeInt, str, typename } from './json.values.js'
import { addJsonType, type JsonField, type JsonType, objectText, TYPES } from './task.json.js'

/**
 * A task's newest notifications as a connection's JSON text (`edges { cursor node }`), in the
 * answer's bytes: the rows `latestNotificationsForTasks` reads, each shown as notification.view.ts
 * shows it (its kind's values parsed at ingest, `callbacks.values`). Row alias `c`.
 */

// base64url without padding, as global ids and cursors are written (PostgreSQL's base64 breaks lines).
const base64url = (text: string) =>
  `rtrim(translate(encode(convert_to(${text}, 'UTF8'), 'base64'), E'+/\\n', '-_'), '=')`
const quoted = (text: string) => `'"' || ${text} || '"'`
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
// A stored time as the DateTime scalar writes the epoch milliseconds the object path reads (floored).
const timeText = (column: string, nullable: boolean) =>
  `case when ${column} is null then ${nullable ? `'null'` : P} else '"' || to_char(timestamp 'epoch' +
    floor(extract(epoch from ${column}) * 1000)::bigint * interval '1 millisecond', ${ISO}) || '"' end`
// GraphQL's Int is 32 bits: a value past it reads as null here (notification.view.ts's int32).
const int32 = (v: string) =>
  `case coalesce(jsonb_typeof(${v}), 'null') when 'null' then 'null' when 'number' then case when (${v}` +
  `)::numeric between -2147483648 and 2147483647 and scale((${v})::numeric) = 0 then (${v})::text else 'null' ` +
  `end else ${P} end`
const codeName = (v: string, names: Record<number, string>) =>
  `case coalesce(jsonb_typeof(${v}), 'null') when 'null' then 'null' when 'number' then case (${v})::text
    ${Object.entries(names)
      .map(([code, name]) => `when '${code}' then '"${name}"'`)
      .join(' ')} else 'null' end else ${P} end`
const boolean = (v: string) =>
  `case coalesce(jsonb_typeof(${v}), 'null') when 'null' then 'null' when 'boolean' then (${v})::text else ${P} end`

const COMMON: JsonType['fields'] = {
  id: { write: () => quoted(base64url(`'Notification:["' || c.id || '"]'`)) },
  kind: {
    write: () =>
      `case c.type ${Object.entries(KINDS)
        .map(([kind, entry]) => `when ${entry.type} then '"${kind}"'`)
        .join(' ')} else '"UNKNOWN"' end`,
  },
  type: { write: () => `c.type::text` },
  serviceCode: { write: () => `to_json(c.service_code)::text` },
  vsId: { write: () => `coalesce(to_json(c.vs_id)::text, 'null')` },
  taskId: { write: () => `coalesce(to_json(c.task_id)::text, 'null')` },
  userName: { write: () => `coalesce(to_json(c.user_name)::text, 'null')` },
  receivedAt: { write: () => timeText('c.received_at', false) },
  deliveries: { write: () => `c.deliveries::text` },
  signatureVerified: { write: () => `case when c.signature = 'verified' then 'true' else 'false' end` },
  cursor: { write: () => quoted(base64url(`'n2:' || c.xid || ':' || c.id`)) },
}

// The stored values' top key a view field reads: the row subquery reads each asked one once, as
// the column `v_<key>`, where every use in a field's text read it anew (a new jsonb value each).
const topKey = (field: ViewField) => field.from.split('.')[0] as string

function viewField(field: ViewField): JsonType['fields'][string] {
  const v =
    field.from === 'size.width' || field.from === 'size.height'
      ? `c.v_size->'${field.from.slice(5)}'`
      : `c.v_${topKey(field)}`
  if (field.from === 'createdAt') return { write: () => timeText('c.service_created_at', true) }
  if (field.from === 'size.width' || field.from === 'size.height') return { write: () => int32(v) }
  switch (field.as) {
    case 'Int':
      return { write: () => int32(v) }
    case 'SafeInt':
      return { write: () => safeInt(v) }
    case 'Float':
      return { write: () => float(v) }
    case 'Boolean':
      return { write: () => boolean(v) }
    case 'String':
      return { write: () => str(v) }
    case 'DateTime':
      return { write: () => dateTime(v) }
    case 'MediaFormat':
      return { type: 'MediaFormat', list: false, at: () => v }
    case 'DisconnectReason':
      return { write: () => codeName(v, { 0: 'NETWORK_TIMEOUT', 1: 'CLIENT_CLOSED', 2: 'PROTOCOL_ERROR' }) }
    case 'ResumeStatus':
      return { write: () => codeName(v, { 0: 'WAITING', 1: 'RESUMED' }) }
  }
  return { write: () => P }
}

/** Each notification object type as text, by type name; the type number of each published kind. */
export const NOTIFICATION_JSON_TYPES: ReadonlyArray<{ type: number | null; name: string }> = [
  ...Object.values(KINDS).map((entry) => ({ type: entry.type as number | null, name: entry.graphqlType as string })),
  { type: null, name: 'UnknownNotification' },
]
for (const entry of Object.values(KINDS)) {
  const view = Object.fromEntries(
    Object.entries(entry.view as Record<string, ViewField>).map(([name, field]) => [name, viewField(field)]),
  )
  addJsonType({ name: entry.graphqlType, fields: { __typename: typename(entry.graphqlType), ...COMMON, ...view } })
}
addJsonType({ name: 'UnknownNotification', fields: { __typename: typename('UnknownNotification'), ...COMMON } })
// The connection's levels are written by taskNotificationsJsonSql below; listed for what a selection may ask.
addJsonType({
  name: 'NotificationEdge',
  fields: {
    __typename: typename('NotificationEdge'),
    cursor: COMMON.cursor as { write: () => string },
    node: { type: 'Notification', list: false, at: '' },
  },
})
addJsonType({
  name: 'NotificationConnection',
  fields: { __typename: typename('NotificationConnection'), edges: { type: 'NotificationEdge', list: true, at: '' } },
})

/**
 * The connection's text for the task whose `hashed_id` is `taskId` (SQL text): its fields as
 * asked, `edges` the newest `perTask` stored callbacks of that task within the scope. `perTask`
 * is a parameter: it keeps one text for any `first`, and lets the page's statement be planned
 * once (see listTasksWithJson).
 */
export function taskNotificationsJsonSql(
  fields: readonly JsonField[],
  taskId: string,
  perTask: number,
  allowedServiceCodes: readonly string[] | undefined,
  allowedUserName: string | undefined,
): SQL {
  // Its values are listed by the page's statement (task.queries.ts: listTasksWithJson), in this order.
  const scope = sql.join([
    allowedServiceCodes === undefined ? sql`` : sql` and ${inArray(callbacks.serviceCode, [...allowedServiceCodes])}`,
    allowedUserName === undefined ? sql`` : sql` and ${ownedBy('callbacks', allowedUserName)}`,
  ])
  const pieces: SQL[] = []
  fields.forEach((field, i) => {
    const open = sql.raw(`'${i === 0 ? '{' : ','}"${field.key}":'`)
    if (field.name === '__typename') pieces.push(sql`${open} || '"NotificationConnection"'`)
    else if (field.name === 'edges') {
      const edge = edgeText(field.fields ?? [])
      const reads = valueReads(field.fields ?? [])
      pieces.push(sql`${open} || (select coalesce('[' || string_agg(${sql.raw(edge)}, ',' order by c.xid desc, c.id
        desc) || ']', '[]') from (
        select xid, id, type, service_code, task_id, user_name, vs_id, service_created_at, received_at, deliveries,
          signature${sql.raw(reads)} from ${callbacks}
        where ${callbacks.taskId} = ${sql.raw(taskId)} and ${FINAL}${scope} order by ${callbacks.xid} desc,
          ${callbacks.id} desc limit ${perTask}::int) c)`)
    } else throw new Error(`NotificationConnection.${field.name} cannot be written as text`)
  })
  return pieces.length === 0 ? sql`'{}'` : sql`${sql.join(pieces, sql` || `)} || '}'`
}

// A document's selection is the same objects on every request: its text is made once.
const edgeTexts = new WeakMap<readonly JsonField[], string>()
const readTexts = new WeakMap<readonly JsonField[], string>()
const VIEWS: Readonly<Record<string, Record<string, ViewField>>> = Object.fromEntries(
  Object.values(KINDS).map((entry) => [entry.graphqlType as string, entry.view as Record<string, ViewField>]),
)

/** The row subquery's reads of the stored values the edges' fields write: `, values->'k' as v_k` each. */
function valueReads(fields: readonly JsonField[]): string {
  const known = readTexts.get(fields)
  if (known !== undefined) return known
  const keys = new Set<string>()
  for (const edge of fields) {
    for (const [typeName, asked] of Object.entries(edge.name === 'node' ? (edge.byType ?? {}) : {})) {
      for (const field of asked) {
        const view = VIEWS[typeName]?.[field.name]
        if (view && view.from !== 'createdAt') keys.add(topKey(view))
      }
    }
  }
  const text = [...keys].map((key) => `, values->'${key}' as v_${key}`).join('')
  readTexts.set(fields, text)
  return text
}

function edgeText(fields: readonly JsonField[]): string {
  const known = edgeTexts.get(fields)
  if (known) return known
  const text = makeEdgeText(fields)
  edgeTexts.set(fields, text)
  return text
}

function makeEdgeText(fields: readonly JsonField[]): string {
  const parts = fields.map((field, i) => {
    const open = `'${i === 0 ? '{' : ','}"${field.key}":'`
    if (field.name === '__typename') return `${open} || '"NotificationEdge"'`
    if (field.name === 'cursor') return `${open} || ${(COMMON.cursor as { write: () => string }).write()}`
    if (field.name === 'node') return `${open} || ${nodeText(field.byType ?? {})}`
    throw new Error(`NotificationEdge.${field.name} cannot be written as text`)
  })
  return parts.length === 0 ? `'{}'` : `${parts.join(' || ')} || '}'`
}

function nodeText(byType: Readonly<Record<string, readonly JsonField[]>>): string {
  const text = (name: string) => objectText(TYPES[name] as JsonType, byType[name] ?? [], 'c', 1)
  const known = NOTIFICATION_JSON_TYPES.filter((entry) => entry.type !== null)
  return `case c.type ${known.map((entry) => `when ${entry.type} then ${text(entry.name)}`).join(' ')} else
    ${text('UnknownNotification')} end`
}

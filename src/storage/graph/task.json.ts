/**
 * A task's pure-data parts (outputs, recordings, thumbnails) written by PostgreSQL as JSON text in
 * exactly the shape and bytes an answer has: keys as asked, in the order asked, compact, values as
 * the GraphQL scalars write them. Built from the stored `tasks.node`, whose layout this knows.
 *
 * Where a stored value would not be written as a plain value (an Int past 32 bits, a missing
 * non-null time, a float JavaScript writes with an exponent), the text carries
 * {@link JSON_FALLBACK_MARK} instead: the reader then answers the request the object way, which
 * says what is wrong the way it always did.
 */

import {
  dateTime,
  field,
  int,
  type JsonField,
  type JsonType,
  JSON_FALLBACK_MARK,
  MEDIA_FORMAT,
  type NestedSpec,
  P,
  RECORDING,
  safeInt,
  STREAM,
  str,
  typeOf,
  typename,
} from './json.values.js'
import { TASK_RECORDINGS } from './recording.queries.js'

export type { JsonField, JsonType } from './json.values.js'

/** The task node's parts that can be written as text. */
export type TaskJsonKind = 'outputs' | 'recordings' | 'thumbnails'

/** One part of a task to write as text: which one and its selection. */
export type TaskJsonPart =
  | { kind: TaskJsonKind; fields: readonly JsonField[] }
  /**
   * The task's newest `perTask` notifications as a connection (`edges` only); null: not written (the object path
   * answers).
   */
  | { kind: 'notifications'; fields: readonly JsonField[]; perTask: number | null }

const ms = (time: string) => `floor(extract(epoch from ${time}) * 1000)::bigint`
const RECORDING_ROW = (r: string) => `jsonb_build_object('serviceCode', ${r}.service_code, 'fileName', ${r}.file_name,
  'taskId', ${r}.task_id, 'userName', ${r}.user_name, 'url', ${r}.url, 'description', ${r}.description,
  'location', ${r}.location, 'views', ${r}.views, 'likes', ${r}.likes, 'outputIndex', ${r}.output_index, 'tag',
    ${r}.tag,
  'path', ${r}.path, 'format', ${r}.format, 'width', ${r}.width, 'height', ${r}.height, 'duration', ${r}.duration,
  'inputBytes', ${r}.input_bytes, 'httpOutputBytes', ${r}.http_output_bytes,
  'createdAt', ${ms(`coalesce(${r}.recorded_at, ${r}.live_started_at)`)}, 'receivedAt', ${ms(`${r}.received_at`)},
  'firstSeenAt', ${ms(`${r}.first_seen_at`)})`

/**
 * A task's recordings as text, from the catalogue (not from the node: a file only listed is one
 * of them too), its first {@link TASK_RECORDINGS}, oldest first, as `Task.recordings` answers them.
 * `t` is the page's task row; `also` narrows them (an output's), given the output element `e`.
 */
function catalogueListText(fields: readonly JsonField[], depth: number, also?: (r: string) => string): string {
  const [r, x] = [`rc${depth}`, `x${depth}`]
  return `(select coalesce('[' || string_agg(${objectText(RECORDING, fields, x, depth)}, ',' order by ${r}.id) || ']',
    '[]')
    from (select * from recordings where service_code = t.service_code and task_id = t.task_id order by id
      limit ${TASK_RECORDINGS}) ${r}
    cross join lateral (select ${RECORDING_ROW(r)} offset 0) as e${depth}(${x})${also ? ` where ${also(r)}` : ''})`
}

// An output's recordings: those a type 2 names by its index, or by its tag without an index (recordedFrom).
const OF_OUTPUT = (e: string) => (r: string) =>
  `((jsonb_typeof(${e}->'index') = 'number' and ${r}.output_index = (${e}->>'index')::numeric)
    or (${r}.output_index is null and ${r}.tag is not null and ${r}.tag = ${e}->>'tag'))`

const THUMBNAIL: JsonType = {
  name: 'Thumbnail',
  fields: {
    __typename: typename('Thumbnail'),
    imageUrl: field(str, 'url'),
    path: field(str, 'path'),
    fileName: field(str, 'fileName'),
    width: field(int, 'width'),
    height: field(int, 'height'),
    receivedAt: field((v) => dateTime(v, false), 'receivedAt'),
  },
}

const OUTPUT: JsonType = {
  name: 'Output',
  fields: {
    __typename: typename('Output'),
    index: field(int, 'index'),
    tag: field(str, 'tag'),
    format: { type: 'MediaFormat', list: false, at: 'format' },
    playUrl: field(str, 'playUrl'),
    timeShiftUrl: field(str, 'timeShiftUrl'),
    fileName: field(str, 'fileName'),
    relativeDir: field(str, 'relativeDir'),
    width: field(int, 'width'),
    height: field(int, 'height'),
    httpOutputBytes: field(safeInt, 'httpOutputBytes'),
    connections: field(int, 'connections'),
    streams: { type: 'Stream', list: true, at: 'streams' },
    startedAt: field(dateTime, 'startedAt'),
    endedAt: field(dateTime, 'endedAt'),
    recordings: { type: 'Recording', list: true, at: 'recordings', catalogue: OF_OUTPUT },
  },
}

export const TYPES: Record<string, JsonType> = {
  MediaFormat: MEDIA_FORMAT,
  Stream: STREAM,
  Recording: RECORDING,
  Thumbnail: THUMBNAIL,
  Output: OUTPUT,
}

/** The object type each part's elements are, by GraphQL type name. */
export const TASK_JSON_PART_TYPE: Readonly<Record<TaskJsonKind, string>> = {
  outputs: 'Output',
  recordings: 'Recording',
  thumbnails: 'Thumbnail',
}

/** Adds an object type that parts can be written in (notification.json.ts adds the notifications'). */
export function addJsonType(type: JsonType): void {
  TYPES[type.name] = type
}

/**
 * The fields of each type that can be written as text, with the type of those that are objects:
 * what the reader checks a selection against before it asks for a part as text.
 */
export function jsonFieldsOf(typeName: string): ReadonlyMap<string, string | null> | undefined {
  const type = TYPES[typeName]
  if (!type) return undefined
  return new Map(Object.entries(type.fields).map(([name, spec]) => [name, 'type' in spec ? spec.type : null]))
}

// PostgreSQL's json_build_object takes at most 100 arguments; this builder concatenates, and
// stays well inside what a plan holds.
const MAX_KEYS = 200
const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/

export function objectText(
  type: JsonType,
  fields: readonly JsonField[],
  e: string,
  depth: number,
  read?: ReadonlyMap<string, string>,
): string {
  if (fields.length > MAX_KEYS) throw new Error(`a text part asks for ${fields.length} keys`)
  // Response keys are GraphQL names: nothing to escape in SQL or JSON, checked all the same.
  for (const asked of fields) if (!NAME.test(asked.key)) throw new Error(`not a GraphQL name: ${asked.key}`)
  const parts = fields.map((asked, i) => {
    const spec = type.fields[asked.name]
    if (!spec) throw new Error(`${type.name}.${asked.name} cannot be written as text`)
    const column = 'write' in spec && spec.key !== undefined ? read?.get(spec.key) : undefined
    const value =
      'write' in spec
        ? column !== undefined && spec.value
          ? spec.value(column)
          : spec.write(e, depth)
        : nestedText(spec, asked.fields ?? [], e, depth)
    return `'${i === 0 ? '{' : ','}"${asked.key}":' || ${value}`
  })
  return parts.length === 0 ? `'{}'` : `${parts.join(' || ')} || '}'`
}

function nestedText(spec: NestedSpec, fields: readonly JsonField[], e: string, depth: number): string {
  if (spec.catalogue) return catalogueListText(fields, depth + 1, spec.catalogue(e))
  const type = TYPES[spec.type] as JsonType
  const v = typeof spec.at === 'function' ? spec.at(e) : `${e}->'${spec.at}'`
  if (!spec.list)
    return (
      `case ${typeOf(v)} when 'null' then 'null' when 'object' then ${objectText(type, fields, v, depth)} else ${P}` +
      ` end`
    )
  return listText(type, fields, v, depth + 1)
}

function listText(type: JsonType, fields: readonly JsonField[], list: string, depth: number): string {
  const x = `x${depth}`
  // Each key an element's fields read, read once: `x->'key'` builds a new jsonb value each time,
  // and a field's text reads it up to five times (its type, its range, its text); that was a
  // fifth of the page statement's time. `offset 0` keeps the planner from folding the reads
  // back into every use.
  const keys = [
    ...new Set(
      fields
        .map((asked) => type.fields[asked.name])
        .flatMap((spec) => (spec && 'write' in spec && spec.key !== undefined ? [spec.key] : [])),
    ),
  ]
  const read = new Map(keys.map((key, i) => [key, `f${depth}_${i}`]))
  const lateral =
    keys.length === 0
      ? ''
      : ` cross join lateral (select ${keys.map((key, i) => `${x}->'${key}' as f${depth}_${i}`).join(', ')} offset 0)
        as r${depth}`
  // A limit of the array's own length changes nothing but the planner's guess of its rows (a
  // tenth of the set function's 100): nested lists guessed at 100 × 100 rows cost a page past
  // jit_above_cost, and JIT compiling took 60 ms to save nothing on a statement that runs in 2.
  return `case when jsonb_typeof(${list}) = 'array' then (select coalesce('[' ||
    string_agg(${objectText(type, fields, x, depth, read)}, ',' order by n${depth}) || ']', '[]')
    from (select * from jsonb_array_elements(${list}) with ordinality as a${depth}(value, place) limit
      jsonb_array_length(${list})) as e${depth}(${x}, n${depth})${lateral}) else ${P} end`
}

/** The SQL text of one part's JSON text, from the stored node `node` (jsonb; SQL null when the row has none). */
export function taskJsonPartSql(part: TaskJsonPart & { kind: TaskJsonKind }, node: string): string {
  // A document's parts are the same objects on every request: their text is made once.
  const known = madeFor.get(part.fields)?.get(`${part.kind}:${node}`)
  if (known) return known
  const type = TYPES[TASK_JSON_PART_TYPE[part.kind]] as JsonType
  const list =
    part.kind === 'recordings'
      ? catalogueListText(part.fields, 1)
      : listText(type, part.fields, `${node}->'${part.kind}'`, 1)
  const text = `case when ${node} is null then null else ${list} end`
  madeFor.set(part.fields, new Map([...(madeFor.get(part.fields) ?? []), [`${part.kind}:${node}`, text]]))
  return text
}

const madeFor = new WeakMap<readonly JsonField[], ReadonlyMap<string, string>>()

/** Whether a part's text must be answered the object way instead (see {@link JSON_FALLBACK_MARK}). */
export function needsObjectPath(text: string | null): boolean {
  return text === null || text.includes(JSON_FALLBACK_MARK)
}

/**
 * The values of a part's JSON text, as SQL over a jsonb value: the scalars, each written as the
 * GraphQL scalar writes it or as {@link P} (the fallback mark) where the object path would write it
 * otherwise, and the object types of the parts' elements. How objects and lists are put together
 * from them is task.json.ts's.
 */

/** In a part's text where a value cannot be written as the object path would write it. */
export const JSON_FALLBACK_MARK = '\\u0001livegate-fallback'
export const P = `'"${JSON_FALLBACK_MARK}"'`

export const typeOf = (v: string) => `coalesce(jsonb_typeof(${v}), 'null')`
// PostgreSQL writes a jsonb string or number as JSON text; its string escapes are JavaScript's.
export const str = (v: string, nullable = true) =>
  `case ${typeOf(v)} when 'string' then (${v})::text when 'null' then ${nullable ? `'null'` : P} else ${P} end`
// Numbers JavaScript wrote: integers and decimals PostgreSQL writes back digit for digit.
const num = (v: string, test: string) =>
  `case ${typeOf(v)} when 'null' then 'null' when 'number' then case when ${test} then (${v})::text else ${P}` +
  ` end else ${P} end`
export const int = (v: string) =>
  num(v, `(${v})::numeric between -2147483648 and 2147483647 and scale((${v})::numeric) = 0`)
export const safeInt = (v: string) => num(v, `abs((${v})::numeric) <= 9007199254740991 and scale((${v})::numeric) = 0`)
// JavaScript writes below 1e-6 and from 1e21 with an exponent, PostgreSQL never.
export const float = (v: string) =>
  num(v, `(${v})::numeric = 0 or abs((${v})::numeric) between 0.000001 and 999999999999999999999`)
// DateTime: epoch milliseconds as RFC 3339 at UTC with milliseconds, years 1 to 9999.
export const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
export const dateTime = (v: string, nullable = true) =>
  `case ${typeOf(v)} when 'null' then ${nullable ? `'null'` : P} when 'number' then case when (${v})::numeric between
    -62135596800000 and 253402300799999 and scale((${v})::numeric) = 0
    then '"' || to_char(timestamp 'epoch' + (${v})::bigint * interval '1 millisecond', ${ISO}) || '"' else ${P} end
      else ${P} end`
// An enum stored by its value's name: each name as itself, anything else the object path's error.
export const enumOf = (v: string, names: readonly string[], nullText: string) =>
  `case when ${typeOf(v)} = 'null' then ${nullText} when jsonb_typeof(${v}) = 'string' and (${v} #>> '{}') in
    (${names.map((name) => `'${name}'`).join(', ')}) then '"' || (${v} #>> '{}') || '"' else ${P} end`
export const typename = (name: string) => ({ write: () => `'"${name}"'` })

/**
 * A field of an answer object: its response key, the schema field it reads, and what is asked of it when it is an
 * object.
 */
export interface JsonField {
  key: string
  name: string
  fields?: readonly JsonField[] | undefined
  /** For a field of an abstract type: the fields asked of each object type it can be, by type name. */
  byType?: Readonly<Record<string, readonly JsonField[]>> | undefined
}

// The parts' object types, each field as the SQL text of its value from the element `e` (jsonb).
// A nested list with `catalogue` is read from the catalogue of recordings, narrowed for the element.
export type NestedSpec = {
  type: string
  list: boolean
  at: string | ((e: string) => string)
  catalogue?: (e: string) => (r: string) => string
}
export type Writer = (e: string, depth: number) => string
/** An object type as text: each field's writer, or the object type of its value and where that is. */
export interface JsonType {
  name: string
  fields: Record<string, { write: Writer; key?: string; value?: (v: string) => string } | NestedSpec>
}

export const at = (key: string) => (e: string) => `${e}->'${key}'`
// `key` and `value` let a list read the element's key once for every use `write` makes of it (listText).
export const field = (write: (v: string) => string, key: string) => ({
  write: (e: string) => write(at(key)(e)),
  key,
  value: write,
})

export const MEDIA_FORMAT: JsonType = {
  name: 'MediaFormat',
  fields: {
    __typename: typename('MediaFormat'),
    containerName: field((v) => str(v, false), 'container'),
    // The documented containers by name in any case; JavaScript's upper case is PostgreSQL's for ASCII only.
    container: {
      write: (e) => {
        const text = `(${e} #>> '{container}')`
        return `case when jsonb_typeof(${e}->'container') is distinct from 'string' then ${P} when upper(${text}) in
          ('FLV', 'RTMP', 'M3U8', 'MP4') then '"' || upper(${text}) || '"'
          when octet_length(${text}) = char_length(${text}) then '"OTHER"' else ${P} end`
      },
    },
    videoCodec: field(str, 'videoCodec'),
    audioCodec: field(str, 'audioCodec'),
  },
}

export const STREAM: JsonType = {
  name: 'Stream',
  fields: {
    __typename: typename('Stream'),
    index: field(int, 'index'),
    kind: field((v) => enumOf(v, ['VIDEO', 'AUDIO'], `'"UNKNOWN"'`), 'kind'),
    codecId: field(int, 'codecId'),
    // An audio stream's size is none (values.resolver.ts).
    width: { write: (e) => `case when ${e}->>'kind' = 'AUDIO' then 'null' else ${int(at('width')(e))} end` },
    height: { write: (e) => `case when ${e}->>'kind' = 'AUDIO' then 'null' else ${int(at('height')(e))} end` },
    copyMode: field((v) => enumOf(v, ['COPY', 'TRANSCODE'], `'null'`), 'copyMode'),
    bitRate: field(safeInt, 'bitRate'),
  },
}

// A recording is the catalogue's row (recordings), built as jsonb under these keys (RECORDING_ROW).
export const RECORDING: JsonType = {
  name: 'Recording',
  fields: {
    __typename: typename('Recording'),
    serviceCode: field((v) => str(v, false), 'serviceCode'),
    fileName: field((v) => str(v, false), 'fileName'),
    taskId: field(str, 'taskId'),
    userName: field(str, 'userName'),
    playUrl: field(str, 'url'),
    description: field(str, 'description'),
    location: field(str, 'location'),
    views: field(int, 'views'),
    likes: field(int, 'likes'),
    outputIndex: field(int, 'outputIndex'),
    tag: field(str, 'tag'),
    path: field(str, 'path'),
    format: { type: 'MediaFormat', list: false, at: 'format' },
    width: field(int, 'width'),
    height: field(int, 'height'),
    duration: field(float, 'duration'),
    inputBytes: field(safeInt, 'inputBytes'),
    httpOutputBytes: field(safeInt, 'httpOutputBytes'),
    createdAt: field(dateTime, 'createdAt'),
    receivedAt: field(dateTime, 'receivedAt'),
    firstSeenAt: field((v) => dateTime(v, false), 'firstSeenAt'),
  },
}

import { readFileSync } from 'node:fs'
import { isEnumType, isObjectType, type GraphQLSchema } from 'graphql'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildGraphqlSchema } from '../../src/adapters/graphql/pipeline/schema.build.js'
import { notificationNode } from '../../src/adapters/graphql/reads/notification.view.js'
import { callbackEvent, factsOf } from '../../src/fold/fold.event.js'
import { CALLBACK_KINDS, callbackKind, KIND_ENTRIES, KINDS, type KnownKind } from '../../src/model/callback.kinds.js'
import { FORM_FIELDS } from '../../src/model/callback.fields.js'
import { parseCallback } from '../../src/model/callback.parse.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

// The parse, the fold, the view and the GraphQL types are derived from the kinds table; these
// hold each of them to it, so that a layer that drifts fails here rather than in a client.

const SAMPLES = sampleCallbacks('kinds-task')
const SAMPLE_OF_KIND: Record<KnownKind, Record<string, string>> = {
  LIVE_START: SAMPLES.liveStart as Record<string, string>,
  LIVE_END: SAMPLES.liveEnd as Record<string, string>,
  ARCHIVED: SAMPLES.archived as Record<string, string>,
  CLIENT_DISCONNECT: SAMPLES.clientDisconnect as Record<string, string>,
  THUMBNAIL: SAMPLES.thumbnail as Record<string, string>,
  LIVE_RESUME: SAMPLES.liveResume as Record<string, string>,
}

/** A stored row of one sample callback, as the graph reads it. */
function storedRow(kind: KnownKind) {
  const fields = SAMPLE_OF_KIND[kind]
  const parsed = parseCallback(fields)
  if (!parsed.ok) throw new Error(parsed.error.message)
  const { callback } = parsed
  const body = Buffer.from(new URLSearchParams(fields).toString())
  return {
    id: 1,
    xid: '1',
    type: callback.type,
    serviceCode: callback.serviceCode,
    taskId: callback.taskId ?? null,
    userName: callback.userName ?? null,
    vsId: callback.vsId ?? null,
    serviceCreatedAt: callback.createdAt ?? null,
    receivedAt: new Date(1_700_000_000_000),
    signedAt: new Date(1_700_000_000_000),
    dedupeKey: `sample-${kind}`,
    values: callback.values,
    signature: 'verified' as const,
    method: 'POST',
    query: '',
    body,
    deliveries: 1,
  }
}

const VALUE_KEYS = new Set<string>(Object.values(FORM_FIELDS).map((field) => field.key))

describe('the kinds table', () => {
  let schema: GraphQLSchema
  beforeAll(async () => {
    schema = await buildGraphqlSchema()
  })

  it('names each type number once, and every other number is UNKNOWN', () => {
    expect(new Set(KIND_ENTRIES.map(([, entry]) => entry.type)).size).toBe(KIND_ENTRIES.length)
    for (const [kind, entry] of KIND_ENTRIES) {
      expect(CALLBACK_KINDS[entry.type]).toBe(kind)
      expect(callbackKind(entry.type)).toBe(kind)
    }
    for (const type of [3, 7, 16, 99, 2_147_483_647]) expect(callbackKind(type)).toBe('UNKNOWN')
  })

  it.each(KIND_ENTRIES)(
    '%s: required fields, fold keys and view sources are fields the parser reads',
    (_kind, entry) => {
      for (const name of entry.required) expect(Object.hasOwn(FORM_FIELDS, name), name).toBe(true)
      for (const key of entry.folds) expect(VALUE_KEYS.has(key), key).toBe(true)
      for (const [name, field] of Object.entries(entry.view)) {
        expect(VALUE_KEYS.has(field.from.replace(/^size\..*/, 'size')), `${name} from ${field.from}`).toBe(true)
      }
    },
  )

  it.each(KIND_ENTRIES)(
    "%s: its GraphQL type has exactly the table's fields beside those of every notification",
    (_kind, entry) => {
      const type = schema.getType(entry.graphqlType)
      const common = schema.getType('UnknownNotification')
      if (!isObjectType(type) || !isObjectType(common)) throw new Error(`${entry.graphqlType} is not an object type`)
      expect(
        type
          .getInterfaces()
          .map((face) => face.name)
          .sort(),
      ).toEqual(['Node', 'Notification'])
      expect(type.description).toBe(entry.description)
      const own = Object.keys(type.getFields()).filter((name) => !Object.hasOwn(common.getFields(), name))
      expect(own.sort()).toEqual(Object.keys(entry.view).sort())
      for (const [name, field] of Object.entries(entry.view)) {
        const graphqlField = type.getFields()[name]
        expect(graphqlField?.description).toBe(field.description)
        expect(String(graphqlField?.type)).toBe(field.as)
      }
    },
  )

  it('NotificationKind has every kind and UNKNOWN, described by the table', () => {
    const kinds = schema.getType('NotificationKind')
    if (!isEnumType(kinds)) throw new Error('NotificationKind is not an enum')
    expect(
      kinds
        .getValues()
        .map((value) => value.name)
        .sort(),
    ).toEqual([...Object.keys(KINDS), 'UNKNOWN'].sort())
    for (const [kind, entry] of KIND_ENTRIES) expect(kinds.getValue(kind)?.description).toBe(entry.summary)
  })

  it.each(KIND_ENTRIES)(
    '%s: a sample with every field reads as a node with a value in every typed field',
    (kind, entry) => {
      const node = notificationNode(storedRow(kind))
      expect(node.kind).toBe(kind)
      for (const name of Object.keys(entry.view)) {
        // `opaque` is sent empty in the samples of some kinds: an empty field is not sent.
        if (SAMPLE_OF_KIND[kind].opaque === '' && name === 'opaque') continue
        expect(node[name], name).not.toBeNull()
        expect(node[name], name).not.toBeUndefined()
      }
    },
  )

  it.each(KIND_ENTRIES)('%s: the fold keeps exactly the values the table says', (kind, entry) => {
    const facts = factsOf(callbackEvent(storedRow(kind)), kind)
    expect(Object.keys(facts).sort()).toEqual([...entry.folds, 'receivedAt'].sort())
  })
})

describe("docs/callbacks.md's list of required fields", () => {
  it('names, for each published type, the fields the kinds table requires', () => {
    const readme = readFileSync(new URL('../../docs/callbacks.md', import.meta.url), 'utf8')
    // "the known types also need: type 0, 2, 9 `hashed_id`; type 1 `hashed_id`, `reach_end`; ..." up to the full stop.
    const list = /the known types also need:([\s\S]*?)\.\s/.exec(readme)?.[1]
    expect(list, 'docs/callbacks.md says which fields each type needs').toBeDefined()
    const said: Record<number, string[]> = {}
    for (const clause of (list as string).split(';')) {
      const [, types = '', fields = ''] = /type\s+([\d,\s]+?)\s+(`[\s\S]*)$/.exec(clause.trim()) ?? []
      for (const type of types.split(',').map((t) => Number(t.trim())))
        said[type] = [...fields.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string).sort()
    }
    const table = Object.fromEntries(KIND_ENTRIES.map(([, entry]) => [entry.type, [...entry.required].sort()]))
    expect(said).toEqual(table)
  })
})

// issue 41: a value the database (or GraphQL's Int) cannot hold is left out by the parse, not met by a statement.
describe('the kinds table and the stored limits', () => {
  const formNameOf = (key: string) => Object.entries(FORM_FIELDS).filter(([, field]) => field.key === key)

  it('every value a kind shows as Int reads only 32-bit whole numbers; the rest of the callback is kept', () => {
    const intKeys = new Set(
      KIND_ENTRIES.flatMap(([, entry]) => Object.values(entry.view))
        .filter((field) => field.as === 'Int' && !field.from.includes('.'))
        .map((field) => field.from),
    )
    expect(intKeys.size).toBeGreaterThan(0)
    for (const key of intKeys)
      for (const [name, field] of formNameOf(key)) {
        expect(field.read('2147483647'), name).toBe(2_147_483_647)
        expect(field.read('2147483648'), name).toBeUndefined()
        expect(field.read('-2147483649'), name).toBeUndefined()
      }
    const parsed = parseCallback({ type: '2', service_code: 'S', hashed_id: 't', output_idx: '3000000000' })
    expect(parsed.ok && parsed.callback.unreadable).toEqual(['output_idx'])
  })

  it('a task id, user or file name longer than an index entry holds is unreadable', () => {
    for (const name of ['hashed_id', 'author', 'username', 'file_name']) {
      expect(FORM_FIELDS[name]?.read('録'.repeat(341)), name).toBe('録'.repeat(341))
      expect(FORM_FIELDS[name]?.read('録'.repeat(342)), name).toBeUndefined()
    }
  })
})

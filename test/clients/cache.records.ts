import type { Cache, UpdatesConfig } from '@urql/exchange-graphcache'

/**
 * Graphcache updaters that record, each time one of the named fields is written, every entity
 * its result holds as the store keeps it: the entity key (`Type:key`) and the fields stored under
 * it. (Graphcache's storage adapter would show the same, but it persists nothing under NODE_ENV=test.)
 */
export function recordingUpdates(fields: Record<string, string[]>): {
  updates: UpdatesConfig
  entities: Map<string, string[]>
} {
  const entities = new Map<string, string[]>()
  const walk = (value: unknown, cache: Cache) => {
    if (Array.isArray(value)) for (const item of value) walk(item, cache)
    if (value === null || typeof value !== 'object') return
    const record = value as Record<string, unknown>
    const key = typeof record.__typename === 'string' ? cache.keyOfEntity(record as { __typename: string }) : null
    if (key)
      entities.set(
        key,
        cache.inspectFields(key).map((field) => field.fieldName),
      )
    for (const child of Object.values(record)) walk(child, cache)
  }
  const updates: UpdatesConfig = Object.fromEntries(
    Object.entries(fields).map(([type, names]) => [
      type,
      Object.fromEntries(
        names.map((name) => [name, (result: unknown, _args: unknown, cache: Cache) => walk(result, cache)]),
      ),
    ]),
  )
  return { updates, entities }
}

/** The normalized Apollo cache entries of one type, by their cache ids. */
export function apolloEntries(
  extracted: Record<string, unknown>,
  typename: string,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(Object.entries(extracted).filter(([id]) => id.startsWith(`${typename}:`))) as Record<
    string,
    Record<string, unknown>
  >
}

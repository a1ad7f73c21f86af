import { getNullableType, isInterfaceType, isListType, isObjectType } from 'graphql'
import { describe, expect, it } from 'vitest'
import { LIST_ITEMS, listItemsOf } from '../../src/adapters/graphql/pipeline/list.items.js'
import { buildGraphqlSchema } from '../../src/adapters/graphql/pipeline/schema.build.js'
import { checkQueryLimits } from '../../src/adapters/graphql/pipeline/query.limits.js'
import { parse } from 'graphql'

// graphql.maxCost holds only if every list counts its items: one that costs as a single item
// let `task { incidents { task { incidents { id } } } }` read 10,000 ids under a maxCost of 5,000.
describe('the cost of an operation counts every list', () => {
  it('every list field of the schema declares how many items it may return', async () => {
    const schema = await buildGraphqlSchema()
    const uncounted: string[] = []
    const lists = new Set<string>()
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__') || !(isObjectType(type) || isInterfaceType(type))) continue
      for (const field of Object.values(type.getFields())) {
        if (!isListType(getNullableType(field.type))) continue
        lists.add(`${type.name}.${field.name}`)
        if (listItemsOf(type, field) === undefined) uncounted.push(`${type.name}.${field.name}`)
      }
    }
    expect(uncounted).toEqual([])
    // And the table names no field the schema no longer has.
    expect(Object.keys(LIST_ITEMS).filter((name) => !lists.has(name))).toEqual([])
  })

  it('a list nested in the items of a list multiplies the cost', async () => {
    const schema = await buildGraphqlSchema()
    const limits = { maxDepth: 20, maxAliases: 50, maxCost: 5000, defaultPageSize: 50 }
    const costOf = (query: string) =>
      checkQueryLimits({ schema, document: parse(query), limits: { ...limits, maxCost: 0 } })?.extensions.actual
    for (const list of ['incidents', 'recordings']) {
      const once = costOf(`{ task(id: "x") { ${list} { id } } }`) as number
      const nested = costOf(`{ task(id: "x") { ${list} { task { ${list} { id } } } } }`) as number
      expect(nested, list).toBeGreaterThan(limits.maxCost)
      expect(nested, list).toBeGreaterThan(once * 50)
    }
  })
})

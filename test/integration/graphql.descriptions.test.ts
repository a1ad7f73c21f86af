import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import {
  type GraphQLSchema,
  buildSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isSpecifiedScalarType,
} from 'graphql'
import { describe, expect, it } from 'vitest'

/**
 * Every type, field, argument and enum value of the schema says what it is. Read from the
 * committed schema/schema.graphql, which graphql.schema.test.ts holds equal to the code's.
 */
function undocumented(schema: GraphQLSchema): string[] {
  const missing: string[] = []
  const need = (description: string | null | undefined, where: string) => {
    if (!description?.trim()) missing.push(where)
  }
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || isSpecifiedScalarType(type)) continue
    need(type.description, type.name)
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        need(field.description, `${type.name}.${field.name}`)
        for (const arg of field.args) need(arg.description, `${type.name}.${field.name}(${arg.name})`)
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) need(field.description, `${type.name}.${field.name}`)
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) need(value.description, `${type.name}.${value.name}`)
    }
  }
  return missing.sort()
}

describe('the schema documents itself', () => {
  it('every type, field, argument and enum value has a description', () => {
    const sdl = readFileSync(fileURLToPath(new URL('../../schema/schema.graphql', import.meta.url)), 'utf8')
    const missing = undocumented(buildSchema(sdl))
    expect(missing).toEqual([])
  })
})

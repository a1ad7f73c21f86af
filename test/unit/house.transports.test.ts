import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// The request core and the transports around it hand each other plain values: execution
// arguments, answers, refusals, a started subscription. Nothing travels as something it is not
// (a cast that forgets the type is how it would start), and the context a resolver is given
// carries data about its request, never a transport's callback. Held here as the floors are.

const SRC = fileURLToPath(new URL('../../src', import.meta.url))

const files = (room: string, only?: RegExp): string[] =>
  readdirSync(join(SRC, room))
    .filter((name) => name.endsWith('.ts') && (!only || only.test(name)))
    .map((name) => join(room, name))

// The websocket adapter, the HTTP transport, and the core's own files in its room.
const CORE = /^(request\.|answer\.rules|subscription\.stream|jit\.executor)/
const WATCHED = [
  ...files('adapters/websocket'),
  ...files('adapters/graphql/http'),
  ...files('adapters/graphql/pipeline', CORE),
]

describe('the request core and its transports', () => {
  it('watches the files it names', () => {
    expect(WATCHED).toContain('adapters/graphql/pipeline/request.pipeline.ts')
    expect(WATCHED).toContain('adapters/websocket/ws.server.ts')
  })

  it('never casts a value to what it is not (`as never`, `as unknown as`)', () => {
    const casts = WATCHED.flatMap((file) =>
      readFileSync(join(SRC, file), 'utf8')
        .split('\n')
        .flatMap((line, index) => (/\bas never\b|\bas unknown as\b/.test(line) ? [`${file}:${index + 1}`] : [])),
    )
    expect(casts).toEqual([])
  })

  it("gives resolvers a context with no transport's callback in it", () => {
    const text = readFileSync(join(SRC, 'adapters/graphql/reads/request.context.ts'), 'utf8')
    const body = text.slice(text.indexOf('export interface GraphqlContext'))
    const fields = body.slice(0, body.indexOf('\n}'))
    expect(fields).not.toMatch(/=>|\bFunction\b|\(\s*\)\s*:/)
  })
})

import { drizzle } from 'drizzle-orm/pg-proxy'
import { GraphQLBoolean, GraphQLInt, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RequestPipeline, type PipelineOutcome } from '../../src/adapters/graphql/pipeline/request.pipeline.js'
import { createContext, type GraphqlContext } from '../../src/adapters/graphql/reads/request.context.js'
import { tables } from '../../src/storage/database.client.js'
import { loadConfig } from '../../src/config/index.js'

// The request pipeline alone, on a schema of its own, with no server and no socket: what it
// hands a socket for a subscription, and how an event's result is executed.

// A field that says who runs it: graphql-js's executor has a frame of its own on the stack, a
// query compiled by graphql-jit calls its resolvers from generated code.
const ranBy = (): string =>
  /graphql[\\/]execution[\\/]execute\.js/.test(new Error().stack ?? '') ? 'graphql-js' : 'compiled'

const Tick = new GraphQLObjectType({
  name: 'Tick',
  fields: {
    n: { type: GraphQLInt },
    ranBy: { type: GraphQLString, resolve: ranBy },
    fails: {
      type: GraphQLString,
      resolve: () => {
        throw new Error('a secret the caller must not read')
      },
    },
  },
})

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: { ranBy: { type: GraphQLString, resolve: ranBy }, ok: { type: GraphQLBoolean } },
  }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      tick: {
        type: Tick,
        args: { from: { type: GraphQLInt } },
        subscribe: async function* (_root: unknown, args: { from?: number | null }) {
          yield { n: args.from ?? 0 }
        },
        resolve: (event: unknown) => event,
      },
    },
  }),
})

const config = loadConfig({ env: {}, value: { log: { level: 'silent' } } })
// Nothing here reads the database: a handle that refuses every statement.
const db = drizzle(
  async () => {
    throw new Error('no database in this test')
  },
  { schema: tables },
)
const socketContext = (): GraphqlContext => createContext({ db, config }, { kind: 'all', canOperate: true }, 'ws')

let pipeline: RequestPipeline
beforeAll(async () => {
  pipeline = await RequestPipeline.start({ config, log: pino({ level: 'silent' }), schema, jsonText: false })
})
afterAll(() => pipeline.stop())

const stream = (outcome: PipelineOutcome) => {
  if (outcome.kind !== 'stream') throw new Error(`expected a stream, got ${JSON.stringify(outcome.result)}`)
  return outcome
}

describe('the request pipeline hands a socket its subscription', () => {
  it('as a stream whose events run the compiled executor, formatted and masked', async () => {
    // The probe tells the two executors apart: a query runs on graphql-js first, compiled after.
    const query = async () => pipeline.run({ query: '{ ranBy }' }, socketContext())
    expect(await query()).toEqual({ kind: 'answer', result: { data: { ranBy: 'graphql-js' } } })
    expect(await query()).toEqual({ kind: 'answer', result: { data: { ranBy: 'compiled' } } })

    const started = stream(
      await pipeline.run(
        { query: 'subscription Ticks($from: Int) { tick(from: $from) { n ranBy } }', variables: { from: 7 } },
        socketContext(),
      ),
    )
    expect(started).toMatchObject({ operationName: null, variables: { from: 7 } })
    const event = await started.source.next()
    expect(event).toEqual({ value: { n: 7 }, done: false })
    // The very first event is compiled already: an event is executed for every subscriber of its operation.
    expect(await started.execute(event.value, socketContext())).toEqual({ data: { tick: { n: 7, ranBy: 'compiled' } } })

    const failing = stream(await pipeline.run({ query: 'subscription { tick { n fails } }' }, socketContext()))
    const result = await failing.execute({ n: 1 }, socketContext())
    expect(result).toEqual({
      data: { tick: { n: 1, fails: null } },
      errors: [
        {
          message: 'Internal error.',
          path: ['tick', 'fails'],
          locations: [{ line: 1, column: 25 }],
          extensions: { code: 'INTERNAL_SERVER_ERROR' },
        },
      ],
    })
  })

  it('as an answer when it cannot start: a bad variable is the caller’s, refused before anything runs', async () => {
    const outcome = await pipeline.run(
      { query: 'subscription ($from: Int) { tick(from: $from) { n } }', variables: { from: 'x' } },
      socketContext(),
    )
    expect(outcome.kind).toBe('answer')
    expect(outcome.kind === 'answer' && outcome.result.errors?.map((error) => error.extensions?.code)).toEqual([
      'BAD_USER_INPUT',
    ])
  })

  it('never over HTTP', async () => {
    const http = createContext({ db, config }, { kind: 'all', canOperate: true })
    const outcome = await pipeline.run({ query: 'subscription { tick { n } }' }, http)
    expect(outcome).toMatchObject({ kind: 'answer', result: { errors: [{ extensions: { code: 'BAD_REQUEST' } }] } })
  })
})

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { ISSUER, type ProviderKey, providerKey, signToken } from '../support/jwks.server.js'

// Issue 42, section 2, as a property: for random users, tasks and ways in (a user-scoped key, or a
// token with a random subject naming the user), no answer holds another user's task, and every
// total counts exactly the user's own.
const CODE = 'PROP'
const USERS = ['anchor_a', 'anchor_b', 'anchor_c']
const keyOf = (user: string) => `key-of-${user}`

const EVERY_PATH = `query($probe: ID!) {
  tasks(first: 100) { totalCount edges { node { taskId user { userName } notifications(first: 20) { totalCount
    edges { node { taskId userName } } } recordings { taskId } } } }
  notifications(first: 100) { totalCount edges { node { taskId userName } } }
  recordings(first: 100) { totalCount edges { node { taskId userName } } }
  users(first: 100) { totalCount edges { node { userName tasks(first: 100) { totalCount edges { node { taskId } } } } } }
  probe: node(id: $probe) { id }
}`

describe(`a broadcaster's own view, as a property (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  // The ground truth: who started each task played so far.
  const ownerOf = new Map<string, string>()
  let provider: ProviderKey
  /** The asker's key, or a token the provider signs for the asker under `subject`. */
  const bearer = async (user: string, via: { token: boolean; subject: string }) => {
    const claims = { sub: via.subject, livegate: { serviceCodes: [CODE], userName: user } }
    const secret = via.token ? await signToken({ key: provider, claims }) : keyOf(user)
    return { authorization: `Bearer ${secret}` }
  }

  beforeAll(async () => {
    db = await openTestDatabase()
    provider = await providerKey('k1')
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [{ serviceCode: CODE, secrets: [SECRET] }],
        apiKeys: USERS.map((user) => ({ name: user, key: keyOf(user), serviceCodes: [CODE], userName: user })),
        graphql: { maxCost: 1_000_000, maxPageSize: 100 },
        auth: { jwt: { keys: [provider.jwk], issuer: ISSUER, audience: 'livegate' } },
      },
    })
    gateway = await startGateway(config, { database: db.database })
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  const lives = fc.array(fc.record({ owner: fc.constantFrom(...USERS), ended: fc.boolean(), archived: fc.boolean() }), {
    minLength: 1,
    maxLength: 3,
  })

  const ways = fc.record({ token: fc.boolean(), subject: fc.stringMatching(/^[a-z0-9_|-]{1,24}$/) })

  it('no answer of a user-scoped key or token holds another user’s task', async () => {
    await fc.assert(
      fc.asyncProperty(lives, fc.constantFrom(...USERS), ways, async (played, asker, via) => {
        for (const live of played) {
          const taskId = `task-${ownerOf.size}`
          ownerOf.set(taskId, live.owner)
          const samples = sampleCallbacks(taskId, CODE)
          const fields: Array<Record<string, string>> = [{ ...samples.liveStart, author: live.owner } as never]
          fields.push(samples.thumbnail as never)
          if (live.archived)
            fields.push({ ...samples.archived, author: live.owner, file_name: `${taskId}.mp4` } as never)
          if (live.ended) fields.push(samples.liveEnd as never)
          for (const one of fields) expect((await deliverTo(gateway, one)).status).toBe(200)
        }
        const own = [...ownerOf].filter(([, owner]) => owner === asker).map(([taskId]) => taskId)
        const foreign = [...ownerOf].find(([, owner]) => owner !== asker)?.[0] ?? 'none'
        const answer = await graphql(
          gateway,
          EVERY_PATH,
          { probe: toGlobalId('Task', CODE, foreign) },
          { headers: await bearer(asker, via) },
        )
        expect(answer.errors, answer.text).toBeUndefined()
        const data = answer.data
        // Every task id anywhere in the answer is one of the asker's.
        const seen = new Set<string>()
        JSON.stringify(data, (key, value) => {
          if (key === 'taskId' && typeof value === 'string') seen.add(value)
          if (key === 'userName' && typeof value === 'string') expect(value).toBe(asker)
          return value
        })
        for (const taskId of seen) expect(ownerOf.get(taskId), taskId).toBe(asker)
        expect(data.probe).toBeNull()
        expect(data.tasks.totalCount).toBe(own.length)
        expect(data.tasks.edges.length).toBe(own.length)
        expect(data.notifications.totalCount).toBe(data.notifications.edges.length)
        expect(data.recordings.totalCount).toBe(data.recordings.edges.length)
        expect(data.users.totalCount).toBe(own.length > 0 ? 1 : 0)
        if (own.length > 0) expect(data.users.edges[0].node.tasks.totalCount).toBe(own.length)
      }),
      { numRuns: 10, seed: 4242 },
    )
  }, 300_000)
})

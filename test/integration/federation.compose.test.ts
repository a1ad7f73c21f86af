import type { ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { composeServices } from '@apollo/composition'
import { parse } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signCallback } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { CHANNELS_SDL } from '../federation/channels.sdl.js'
import { driverName, openTestDatabase, serverUrl, type TestDatabase } from '../support/database.fixture.js'
import { SECRET, send } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { ROOT, startListeningProcess, startServeProcess } from '../support/livegate.process.js'
import { scratchDirs } from '../support/scratch.dir.js'

const scratch = scratchDirs('livegate-federation-')
const KEY = 'router-key'
const bearer = { headers: { authorization: `Bearer ${KEY}` } }
const TSX = ['--import', 'tsx']

// Every part is a process of its own, as in production: livegate, a second subgraph, and the
// Node router (@apollo/gateway) over the supergraph @apollo/composition made of the two.
describe(
  `livegate in a supergraph: composed with a second ` + `subgraph, queried through @apollo/gateway (${driverName})`,
  () => {
    let db: TestDatabase | undefined
    const processes: ChildProcess[] = []
    let livegate = ''
    let channels = ''
    let router = ''
    let supergraph = ''

    beforeAll(async () => {
      const dir = scratch()
      const configFile = join(dir, 'livegate.json')
      writeFileSync(
        configFile,
        JSON.stringify({
          port: 0,
          services: [
            { serviceCode: 'TESTING', secrets: [SECRET] },
            { serviceCode: 'OTHER', secrets: [SECRET] },
          ],
          apiKeys: [{ name: 'router', key: KEY, serviceCodes: ['TESTING'] }],
          graphql: { federation: true },
        }),
      )
      if (serverUrl) db = await openTestDatabase()
      const database = db?.url ? { DATABASE_URL: db.url } : { LIVEGATE_DATA_DIR: 'memory://' }
      const [served, subgraph] = await Promise.all([
        startServeProcess(['--config', configFile], { ...process.env, ...database, LOG_LEVEL: 'info' }),
        startListeningProcess(
          [...TSX, join(ROOT, 'test/federation/channels.subgraph.ts')],
          process.env,
          /channels listening on (\S+)/,
        ),
      ])
      processes.push(served.process, subgraph.process)
      livegate = served.url
      channels = subgraph.url
      for (const fields of [
        sampleCallbacks('federated-task').liveStart,
        sampleCallbacks('federated-task', 'OTHER').liveStart,
      ]) {
        const answer = await send(
          signCallback(fields as Record<string, string>, {
            url: `${livegate}/callbacks`,
            method: 'POST',
            secret: SECRET,
            headerPrefix: 'svc',
            nowMs: Date.now(),
          }),
        )
        expect(answer.status, answer.text).toBe(200)
      }
      // The graph is folded just after the acknowledgement (expect.poll is for tests, not hooks).
      for (
        let tries = 0;
        (await graphql({ url: livegate }, '{ tasks { totalCount } }', {}, bearer)).data?.tasks.totalCount !== 1;
        tries++
      ) {
        if (tries > 600) throw new Error('the task was never folded')
        await new Promise((resolve) => setTimeout(resolve, 100))
      }

      // What a platform team does: read each subgraph's SDL and compose them.
      const sdl = await graphql({ url: livegate }, '{ _service { sdl } }', {}, bearer)
      expect(sdl.errors, sdl.text).toBeUndefined()
      const composed = composeServices([
        { name: 'livegate', url: `${livegate}/graphql`, typeDefs: parse(sdl.data._service.sdl) },
        { name: 'channels', url: channels, typeDefs: parse(CHANNELS_SDL) },
      ])
      expect(composed.errors?.map((error) => error.message)).toBeUndefined()
      supergraph = join(dir, 'supergraph.graphql')
      writeFileSync(supergraph, composed.supergraphSdl as string)
      const routed = await startListeningProcess(
        [...TSX, join(ROOT, 'test/federation/supergraph.gateway.ts'), supergraph],
        process.env,
        /router listening on (\S+)/,
      )
      processes.push(routed.process)
      router = routed.url
    }, 600_000)

    afterAll(async () => {
      for (const child of processes) child.kill('SIGKILL')
      await db?.drop()
    })

    const throughRouter = async (query: string) => {
      const response = await fetch(router, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer.headers },
        body: JSON.stringify({ query }),
      })
      return {
        status: response.status,
        body: (await response.json()) as { data?: any; errors?: Array<{ message: string }> },
      }
    }

    it("composes livegate's SDL (as committed in schema/subgraph.graphql) with the channels subgraph", () => {
      const committed = readFileSync(join(ROOT, 'schema/subgraph.graphql'), 'utf8')
      const composed = composeServices([
        { name: 'livegate', url: `${livegate}/graphql`, typeDefs: parse(committed) },
        { name: 'channels', url: channels, typeDefs: parse(CHANNELS_SDL) },
      ])
      expect(composed.errors?.map((error) => error.message)).toBeUndefined()
      expect(readFileSync(supergraph, 'utf8')).toContain('join__type(graph: LIVEGATE, key: "serviceCode taskId")')
    })

    it("answers one query that spans both subgraphs, joined on the cloud's key, both ways", async () => {
      const answer = await throughRouter(`{
      channels { name task { taskId status userName outputs { tag } channel { name } } }
      tasks(first: 5) { totalCount edges { node { id taskId serviceCode status channel { name } } } }
    }`)
      expect(answer.body.errors).toBeUndefined()
      expect(answer.body.data.channels[0]).toEqual({
        name: 'Morning news',
        task: {
          taskId: 'federated-task',
          status: 'LIVE',
          userName: 'alice',
          outputs: [{ tag: 'tcp_output_live_only' }],
          channel: { name: 'Morning news' },
        },
      })
      expect(answer.body.data.tasks.totalCount).toBe(1)
      expect(answer.body.data.tasks.edges[0].node).toMatchObject({
        taskId: 'federated-task',
        serviceCode: 'TESTING',
        status: 'LIVE',
        channel: { name: 'Morning news' },
      })
    })

    it("resolves through the caller's scope: a task livegate does not hold for this key is null", async () => {
      const answer = await throughRouter('{ channels { name task { taskId status } } }')
      // The second channel shows a task livegate never saw; the router nulls what livegate answered null for.
      expect(answer.body.data.channels.map((channel: { task: unknown }) => channel.task)).toEqual([
        { taskId: 'federated-task', status: 'LIVE' },
        null,
      ])
    })
  },
)

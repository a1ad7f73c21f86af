import './peer.polyfill.js'
import { createServer } from 'node:http'
import { postgraphile } from 'postgraphile'
import { makePgService } from 'postgraphile/adaptors/pg'
import { grafserv } from 'postgraphile/grafserv/node'
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber'
import { jsonPgSmartTags } from 'postgraphile/utils'
import { PostGraphileConnectionFilterPreset } from 'postgraphile-plugin-connection-filter'

/**
 * PostGraphile 5 as a user would deploy it over livegate's tables, in a process of its own:
 * `tsx peer.process.ts <database url> <port>`; writes `ready` on standard output once it listens.
 * The amber preset and the connection-filter plugin (the task page's status filter needs `in`),
 * one smart tag (below), and nothing else of ours: no SQL, no code of livegate.
 */
const [databaseUrl, port] = process.argv.slice(2) as [string, string]

// callbacks has no foreign key to tasks (a callback may come before its task is folded); the tag
// declares the one a user would, so a task lists its callbacks. `(service_code, task_id)` is
// tasks' unique key (tasks_service_code_task_id_unique), and callbacks_task_position_idx serves the task_id side.
const smartTags = jsonPgSmartTags({
  version: 1,
  config: {
    class: {
      // A unique index, not a constraint: PostGraphile asks for the tag to see it as a key.
      tasks: { tags: { unique: 'service_code,task_id' } },
      callbacks: {
        tags: {
          foreignKey:
            '(service_code, task_id) references tasks (service_code, task_id)|@foreignFieldName ' +
            'callbacks|@fieldName task',
        },
      },
    },
  },
})

const preset: GraphileConfig.Preset = {
  extends: [PostGraphileAmberPreset, PostGraphileConnectionFilterPreset],
  plugins: [smartTags],
  // livegate's own pool size on a server (10), as the ceiling has.
  pgServices: [makePgService({ connectionString: databaseUrl, schemas: ['public'], poolConfig: { max: 10 } })],
  grafserv: { graphiql: false, watch: false, graphqlPath: '/graphql' },
  grafast: { explain: false },
}

const pgl = postgraphile(preset)
const serv = pgl.createServ(grafserv)
const server = createServer()
server.keepAliveTimeout = 60_000
serv.addTo(server).catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
// The schema is built before the first request is answered, not during a measured window.
await pgl.getSchema()
server.listen(Number(port), '127.0.0.1', () => console.log('ready'))
process.once('SIGTERM', () => {
  server.closeAllConnections()
  server.close()
  void Promise.resolve(pgl.release()).then(() => process.exit(0))
})

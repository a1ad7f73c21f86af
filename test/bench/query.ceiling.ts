import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import type { IResolvers } from 'mercurius'
import mercurius from 'mercurius'
import { DateTimeResolver, JSONResolver, SafeIntResolver } from 'graphql-scalars'
import type { Config } from '../../src/config/index.js'
import type { Db } from '../../src/storage/database.client.js'
import { countNotifications, notificationPage } from '../../src/storage/notification.queries.js'
import type { TaskQuery } from '../../src/storage/task.queries.js'
import type { MediaFormatNode, RecordingNode, StreamNode, TaskNode, ThumbnailNode } from '../../src/fold/graph.model.js'
import { outputViews, taskGlobalId } from '../../src/adapters/graphql/node.view.js'
import { mediaContainer } from '../../src/adapters/graphql/types/media-format.type.js'
import { createLoaders, type Loaders } from '../../src/adapters/graphql/loaders.create.js'
import { type NotificationNode, notificationCursor, notificationNode } from '../../src/adapters/graphql/notification.view.js'
import { type ConnectionData, pageWindow, taskCursor, toConnection } from '../../src/adapters/graphql/pagination.js'
import { taskConnection } from '../../src/adapters/graphql/resolvers/task.resolver.js'

/** The engine ceiling the query bench measures livegate against, and how to stop it. */
export interface CeilingServer {
  url: string
  close(): Promise<void>
}

interface CeilingContext {
  db: Db
  loaders: Loaders
}

// The published contract, so both servers validate and answer against the same types.
const SDL = readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8')

const TYPE_NAMES: Record<number, string> = {
  0: 'LiveStartNotification',
  1: 'LiveEndNotification',
  2: 'ArchivedNotification',
  8: 'ClientDisconnectNotification',
  9: 'ThumbnailNotification',
  15: 'LiveResumeNotification',
}

interface PageArgs {
  first?: number | null
  after?: string | null
}

/**
 * Hand-written resolvers over livegate's own store functions and loaders (the same SQL), its
 * fold and its notification view (the same data), and nothing else: no auth, no limits, no
 * plugins. What is left is the engine, so the gap to it is livegate's own overhead.
 */
function resolvers(pageSizes: Config['graphql']): IResolvers {
  return {
    DateTime: DateTimeResolver,
    SafeInt: SafeIntResolver,
    JSON: JSONResolver,
    Query: {
      async tasks(_root: unknown, args: PageArgs & { filter?: Omit<TaskQuery, 'allowedServiceCodes'> | null }, { db, loaders }: CeilingContext): Promise<ConnectionData<TaskNode>> {
        const query: TaskQuery = { ...(args.filter ?? {}) }
        return taskConnection(db, loaders, query, pageWindow(args, pageSizes, taskCursor))
      },
    },
    // The fields livegate derives rather than reads off the fold's values, derived the same way.
    Task: {
      id: (task: TaskNode) => taskGlobalId(task),
      taskId: (task: TaskNode) => task.id,
      userName: (task: TaskNode) => task.author,
      outputs: (task: TaskNode) => outputViews(task),
      async notifications(task: TaskNode, args: PageArgs & { filter?: unknown }, { db, loaders }: CeilingContext): Promise<ConnectionData<NotificationNode>> {
        const window = pageWindow(args, pageSizes, notificationCursor)
        const parts = { codec: notificationCursor, keyOf: (row: { id: number }) => row.id, toNode: notificationNode }
        if (!args.filter && window.after === undefined) {
          const rows = await loaders.notificationsOfTask(window.fetch).load(task.id)
          return toConnection(rows, window, { ...parts, countAll: () => loaders.notificationCountOfTask.load(task.id) })
        }
        // The bench asks only for the latest few; other pages keep the filterless path.
        const criteria = { taskId: task.id }
        const rows = await notificationPage(db, criteria, { beforeId: window.after, limit: window.fetch })
        return toConnection(rows, window, { ...parts, countAll: () => countNotifications(db, criteria) })
      },
    },
    Recording: { playUrl: (recording: RecordingNode) => recording.url },
    Thumbnail: { imageUrl: (thumbnail: ThumbnailNode) => thumbnail.url },
    MediaFormat: { container: (format: MediaFormatNode) => mediaContainer(format.container), containerName: (format: MediaFormatNode) => format.container },
    Stream: {
      kind: (stream: StreamNode) => stream.kind ?? 'UNKNOWN',
      width: (stream: StreamNode) => (stream.kind === 'AUDIO' ? null : stream.width),
      height: (stream: StreamNode) => (stream.kind === 'AUDIO' ? null : stream.height),
    },
    TaskConnection: { totalCount: (connection: ConnectionData<unknown>) => connection.countAll() },
    NotificationConnection: { totalCount: (connection: ConnectionData<unknown>) => connection.countAll() },
    Notification: { resolveType: (node: { type: number }) => TYPE_NAMES[node.type] ?? 'UnknownNotification' },
  } as unknown as IResolvers
}

/**
 * mercurius + graphql-jit on fastify, on the bench's database: documents parsed and validated
 * once (its LRU), every operation compiled by graphql-jit from its second request on.
 */
export async function startCeiling(db: Db, pageSizes: Config['graphql']): Promise<CeilingServer> {
  const app = Fastify({ logger: false })
  await app.register(mercurius, {
    schema: SDL,
    resolvers: resolvers(pageSizes),
    jit: 1,
    context: (): CeilingContext => ({ db, loaders: createLoaders(db, undefined) }),
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() }
}

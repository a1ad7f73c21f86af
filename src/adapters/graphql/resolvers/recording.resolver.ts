import { deriveTask } from '../../../fold/task.derive.js'
import { latestMissing } from '../../../storage/graph/recording-missing.statements.js'
import { countRecordings, listRecordings, type RecordingQuery } from '../../../storage/graph/recording.queries.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import { allowedCodes, allowedUser, type Scope } from '../auth.scope.js'
import { type ConnectionData, PAGE_ARGUMENTS, pageSize, pageWindow, toConnection } from '../connection.pagination.js'
import { requireGlobalId } from '../global.id.js'
import { recordingCursor, type RecordingView, recordingView } from '../reads/recording.view.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { Arg, Ctx, FieldResolver, Int, Query, Resolver, Root } from '../type-graphql.shim.js'
import { MissingRecording, Recording, RecordingConnection, RecordingFilter } from '../types/recording.type.js'
import { Task } from '../types/task.type.js'

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS

/** `recordings`: the catalogue of recorded files, and each one's task. */
@Resolver(() => Recording)
export class RecordingResolver {
  @Query(() => RecordingConnection, {
    description:
      "The catalogue of recordings, newest first: every file the callbacks or the cloud's archive (`list_files`) " +
      'named, one per file.',
  })
  async recordings(
    @Arg('filter', () => RecordingFilter, {
      nullable: true,
      description: 'Which recordings; all the caller may read when absent.',
    })
    filter: RecordingFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, scope }: GraphqlContext,
  ): Promise<ConnectionData<RecordingView>> {
    const query = recordingQuery(filter, scope)
    const window = pageWindow({ first, after }, config.graphql, recordingCursor)
    const rows = await listRecordings(db, query, window.after, window.fetch)
    return toConnection(rows, window, {
      codec: recordingCursor,
      keyOf: (row) => ({ sortAt: row.sortAt.getTime(), id: row.id }),
      toNode: (row) => recordingView(row),
      countAll: () => countRecordings(db, query),
    })
  }

  @Query(() => [MissingRecording], {
    description:
      'Tasks still without the recording told missing (`recording.missing`), latest first, of codes the key reads.',
  })
  async missingRecordings(
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Ctx() { db, config, loaders, scope }: GraphqlContext,
  ): Promise<Array<{ task: TaskView | null; toldAt: Date }>> {
    const size = pageSize(first ?? null, config.graphql)
    const rows = await latestMissing(db, allowedCodes(scope), size, allowedUser(scope))
    const tasks = await Promise.all(rows.map(({ serviceCode, taskId }) => loaders.task.load({ serviceCode, taskId })))
    return rows.flatMap((row, i) => {
      const task = tasks[i]
      return task ? [{ task: deriveTask(task.state), toldAt: row.toldAt }] : []
    })
  }

  @FieldResolver(() => Task, {
    nullable: true,
    description: 'The task it was recorded from, when known without doubt; null otherwise.',
  })
  async task(@Root() recording: RecordingView, @Ctx() { loaders }: GraphqlContext): Promise<TaskView | null> {
    if (!recording.taskId) return null
    const row = await loaders.task.load({ serviceCode: recording.serviceCode, taskId: recording.taskId })
    return row ? deriveTask(row.state) : null
  }
}

function recordingQuery(filter: RecordingFilter | null | undefined, scope: Scope): RecordingQuery {
  const query: RecordingQuery = { allowedCodes: allowedCodes(scope), allowedUserName: allowedUser(scope) }
  if (!filter) return query
  if (filter.serviceCode != null) query.serviceCode = filter.serviceCode
  if (filter.userName != null) query.userName = filter.userName
  if (filter.task != null) {
    const [serviceCode = '', taskId = ''] = requireGlobalId(filter.task, 'filter', ['Task'], 'filter.task').key
    // A task of another code than the filter's matches nothing, as its own code would.
    if (query.serviceCode !== undefined && query.serviceCode !== serviceCode) query.allowedCodes = []
    query.serviceCode = serviceCode
    query.taskId = taskId
  }
  if (filter.seenIn != null) query.seenIn = filter.seenIn
  if (filter.createdAfter != null) query.createdAfter = filter.createdAfter
  if (filter.createdBefore != null) query.createdBefore = filter.createdBefore
  return query
}

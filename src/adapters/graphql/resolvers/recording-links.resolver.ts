import type { UserNode } from '../../../fold/graph.model.js'
import {
  countRecordings,
  listRecordings,
  type RecordingQuery,
  TASK_RECORDINGS,
} from '../../../storage/graph/recording.queries.js'
import type { RecordingRow } from '../../../storage/tables/recording.table.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import { allowedCodes, allowedUser } from '../auth.scope.js'
import { type ConnectionData, PAGE_ARGUMENTS, pageWindow, toConnection } from '../connection.pagination.js'
import type { OutputValue } from '../reads/node.view.js'
import { recordingCursor, type RecordingView, recordingView } from '../reads/recording.view.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { Arg, Ctx, FieldResolver, Int, Resolver, Root } from '../type-graphql.shim.js'
import { Output } from '../types/output.type.js'
import { Recording, RecordingConnection } from '../types/recording.type.js'
import { Task } from '../types/task.type.js'
import { User } from '../types/user.type.js'

/**
 * A task's, an output's and a user's recordings: the catalogue's nodes, the very ones
 * `recordings` and `node(id:)` answer (one per file, whichever channel told it first), so a file
 * only the list names is a recording of its task too.
 */

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS

function ofTask(task: Pick<TaskView, 'serviceCode' | 'id'>, { loaders }: GraphqlContext): Promise<RecordingRow[]> {
  return loaders.recordingsOfTask.load({ serviceCode: task.serviceCode, taskId: task.id })
}

/**
 * Whether a type 2 was recorded from this output: by its index, or by its tag when the callback
 * gave no index (the fold's join of a task's outputs). A file only listed names no output.
 */
export function recordedFrom(
  output: Pick<OutputValue, 'index' | 'tag'>,
  row: Pick<RecordingRow, 'outputIndex' | 'tag'>,
): boolean {
  if (output.index !== null && row.outputIndex === output.index) return true
  return row.outputIndex === null && output.tag !== null && row.tag === output.tag
}

@Resolver(() => Task)
export class TaskRecordingsResolver {
  @FieldResolver(() => [Recording], {
    description:
      `Its recordings, oldest first: every file of the catalogue linked to it, announced by a type 2 or only ` +
      `listed; the first ${TASK_RECORDINGS} (\`recordings(filter: { task })\` pages through all).`,
  })
  async recordings(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<RecordingView[]> {
    return (await ofTask(task, context)).map(recordingView)
  }
}

@Resolver(() => Output)
export class OutputRecordingsResolver {
  @FieldResolver(() => [Recording], {
    description: 'The recordings a type 2 says were recorded from it, oldest first.',
  })
  async recordings(@Root() output: OutputValue, @Ctx() context: GraphqlContext): Promise<RecordingView[]> {
    const rows = await ofTask(output.task, context)
    return rows.filter((row) => recordedFrom(output, row)).map(recordingView)
  }
}

@Resolver(() => User)
export class UserRecordingsResolver {
  @FieldResolver(() => RecordingConnection, {
    description: "This user's recordings (their `userName` is exactly this user's), newest first.",
  })
  async recordings(
    @Root() user: UserNode,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, scope }: GraphqlContext,
  ): Promise<ConnectionData<RecordingView>> {
    const query: RecordingQuery = {
      allowedCodes: allowedCodes(scope),
      allowedUserName: allowedUser(scope),
      serviceCode: user.serviceCode,
      userName: user.userName,
    }
    const window = pageWindow({ first, after }, config.graphql, recordingCursor)
    const rows = await listRecordings(db, query, window.after, window.fetch)
    return toConnection(rows, window, {
      codec: recordingCursor,
      keyOf: (row) => ({ sortAt: row.sortAt.getTime(), id: row.id }),
      toNode: recordingView,
      countAll: () => countRecordings(db, query),
    })
  }
}

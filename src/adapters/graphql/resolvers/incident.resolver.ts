import DataLoader from 'dataloader'
import { deriveTask } from '../../../fold/task.derive.js'
import { textProblem } from '../../../model/action.model.js'
import {
  countIncidents,
  type IncidentCriteria,
  incidentPage,
  incidentsByIds,
  incidentsOfTasks,
  TASK_INCIDENTS,
} from '../../../storage/alerts/incident.queries.js'
import { acknowledgeIncident, refuseAcknowledgement } from '../../../storage/alerts/incident.statements.js'
import type { IncidentRow } from '../../../storage/tables/incident.table.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import { actorOf } from '../action.outcome.js'
import { allowedCodes, allowedUser, requireOperate, type Scope } from '../auth.scope.js'
import { type ConnectionData, PAGE_ARGUMENTS, pageWindow, rowIdCursor, toConnection } from '../connection.pagination.js'
import { requireGlobalId, toGlobalId } from '../global.id.js'
import { badUserInput } from '../graphql.errors.js'
import { type GraphqlContext, subscribeTo } from '../reads/request.context.js'
import {
  Arg,
  Ctx,
  FieldResolver,
  ID,
  Int,
  Mutation,
  Query,
  Resolver,
  Root,
  Subscription,
} from '../type-graphql.shim.js'
import { Incident, IncidentConnection, IncidentFilter } from '../types/incident.type.js'
import { Task } from '../types/task.type.js'

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS
const incidentCursor = rowIdCursor('i1')

/** Incidents: the page, the push, the acknowledgement. */
@Resolver(() => Incident)
export class IncidentResolver {
  @Query(() => IncidentConnection, { description: 'Incidents the caller may read, newest first (docs/alerts.md).' })
  async incidents(
    @Arg('filter', () => IncidentFilter, {
      nullable: true,
      description: 'Which incidents; all the caller may read when absent.',
    })
    filter: IncidentFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, scope }: GraphqlContext,
  ): Promise<ConnectionData<IncidentRow>> {
    const window = pageWindow({ first, after }, config.graphql, incidentCursor)
    const criteria = incidentCriteria(filter, scope)
    const rows = await incidentPage(db, criteria, window.after, window.fetch)
    return toConnection(rows, window, {
      codec: incidentCursor,
      keyOf: (row) => row.id,
      toNode: (row) => row,
      countAll: () => countIncidents(db, criteria),
    })
  }

  @Mutation(() => Incident, {
    description:
      'Acknowledges an incident: someone is on it. Needs an API key with `"can": ["operate"]` of its service ' +
      'code (else FORBIDDEN, recorded); audited as an action (`ACKNOWLEDGE_INCIDENT`). Safe to repeat: an ' +
      'incident already acknowledged or resolved is answered as it stands. It still resolves by the data.',
  })
  async acknowledgeIncident(
    @Arg('id', () => ID, { description: "The incident's global id (`Incident.id`)." }) id: string,
    @Arg('note', () => String, {
      nullable: true,
      description: 'What the operator notes (at most 1,000 characters, one line).',
    })
    note: string | null | undefined,
    @Ctx() { db, scope }: GraphqlContext,
  ): Promise<IncidentRow> {
    const [rowId = ''] = requireGlobalId(id, 'id', ['Incident']).key
    const problem = note == null ? undefined : textProblem('note', note)
    if (problem) throw badUserInput(problem, 'note')
    const actor = actorOf(scope)
    const who = { by: actor.by, keyName: actor.keyName ?? null, note: note ?? null }
    // A broadcaster's own view: an incident not of the user's tasks answers as one livegate does not know.
    if (scope.userName !== undefined && (await incidentsByIds(db, [Number(rowId)]))[0]?.taskAuthor !== scope.userName)
      throw badUserInput('id names no incident livegate knows.', 'id')
    if (!scope.canOperate) {
      await refuseAcknowledgement(db, Number(rowId), who, new Date(), allowedCodes(scope))
      requireOperate(scope, 'acknowledging an incident')
    }
    // Out of scope or unknown: the same answer, so a key learns nothing of another tenant's incidents.
    const row = await acknowledgeIncident(db, Number(rowId), who, new Date(), allowedCodes(scope))
    if (!row) throw badUserInput('id names no incident livegate knows.', 'id')
    return row
  }

  @Subscription(() => Incident, {
    description: 'Each incident the caller may read, pushed when it opens, is acknowledged, and resolves.',
    subscribe: ({ args, context }) =>
      subscribeTo(context, 'incident', (scope) =>
        incidentCriteria((args as { filter?: IncidentFilter | null }).filter, scope),
      ),
  })
  incidentChanged(
    @Root() row: IncidentRow,
    @Arg('filter', () => IncidentFilter, {
      nullable: true,
      description: 'Which incidents to follow; all the caller may read when absent.',
    })
    _filter: IncidentFilter | null,
  ): IncidentRow {
    return row
  }

  @FieldResolver(() => ID, { description: 'An opaque global id; pass it to `node(id:)`.' })
  id(@Root() row: IncidentRow): string {
    return incidentGlobalId(row)
  }

  @FieldResolver(() => Task, { nullable: true, description: "Its task; null for a service code's incident." })
  async task(@Root() row: IncidentRow, @Ctx() context: GraphqlContext): Promise<TaskView | null> {
    if (row.taskId === null) return null
    const task = await context.loaders.task.load({ serviceCode: row.serviceCode, taskId: row.taskId })
    return task ? deriveTask(task.state) : null
  }
}

/** `Task.incidents`: a task's incidents. */
@Resolver(() => Task)
export class TaskIncidentsResolver {
  @FieldResolver(() => [Incident], { description: `This task's incidents, newest first (at most ${TASK_INCIDENTS}).` })
  async incidents(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<IncidentRow[]> {
    return (await incidentLoaderOf(context).load(`${task.serviceCode}\u0000${task.id}`)) ?? []
  }
}

/** An incident's global id: of its row id. */
export function incidentGlobalId(row: Pick<IncidentRow, 'id'>): string {
  return toGlobalId('Incident', row.id)
}

/** The `IncidentFilter` argument as store criteria, within the caller's scope. */
export function incidentCriteria(filter: IncidentFilter | null | undefined, scope: Scope): IncidentCriteria {
  const criteria: IncidentCriteria = { allowedServiceCodes: allowedCodes(scope), allowedUserName: allowedUser(scope) }
  if (!filter) return criteria
  criteria.serviceCode = filter.serviceCode ?? null
  criteria.rule = filter.rule ?? null
  criteria.state = filter.state ?? null
  if (filter.task) {
    const [serviceCode = '', taskId = ''] = requireGlobalId(filter.task, 'filter', ['Task'], 'filter.task').key
    // Another code than `serviceCode` asks for nothing, and gets it.
    criteria.serviceCode = filter.serviceCode != null && filter.serviceCode !== serviceCode ? '\u0001' : serviceCode
    criteria.taskId = taskId
  }
  return criteria
}

const incidentLoaders = new WeakMap<GraphqlContext, DataLoader<string, IncidentRow[]>>()

// Per request, like every loader: a page of tasks reads its incidents in one statement.
function incidentLoaderOf(context: GraphqlContext): DataLoader<string, IncidentRow[]> {
  let loader = incidentLoaders.get(context)
  if (!loader) {
    loader = new DataLoader(async (keys: readonly string[]) => {
      const pairs = keys.map((key) => {
        const [serviceCode = '', taskId = ''] = key.split('\u0000')
        return { serviceCode, taskId }
      })
      const byKey = new Map<string, IncidentRow[]>()
      for (const row of await incidentsOfTasks(context.db, pairs)) {
        const key = `${row.serviceCode}\u0000${row.taskId}`
        const list = byKey.get(key)
        if (list) list.push(row)
        else byKey.set(key, [row])
      }
      return keys.map((key) => byKey.get(key) ?? [])
    })
    incidentLoaders.set(context, loader)
  }
  return loader
}

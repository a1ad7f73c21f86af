import { type GraphQLCompositeType, type GraphQLField, getNullableType, isListType } from 'graphql'
import type { ComplexityEstimator } from 'graphql-query-complexity'
import { KEPT } from '../../../fold/task.fold.js'
import { KEPT_PER_USER } from '../../../fold/user.fold.js'
import { TASK_INCIDENTS } from '../../../storage/alerts/incident.queries.js'
import { TASK_RECORDINGS } from '../../../storage/graph/recording.queries.js'
import { MAX_POINTS } from '../reads/audience.window.js'

/**
 * How many items a list field may return: what the cost of an operation counts its selection by
 * (query.limits.ts). A number the read holds to, or an estimate where nothing bounds the list
 * (what the cloud lists, what a configuration lists); `first`, a page of the `first` argument,
 * else the default page size; `ids`, as many as the `ids` argument lists; `connection`, a
 * connection's `edges`, which the connection counts already. A list counted as one item let
 * `task { incidents { task { incidents { id } } } }` read 10,000 ids under a maxCost of 5,000.
 */
export type ListItems = number | 'first' | 'ids' | 'connection'

/** What the cloud lists of a task or an output (outputs, inputs, streams): an estimate, nothing bounds it. */
const CLOUD_ITEMS = 4
/** What a configuration lists (service codes, endpoints, their patterns): an estimate, a configuration holds it. */
const CONFIGURED_ITEMS = 10

/** Every list field of the schema, by `Type.field` (a unit test holds the schema to it). */
export const LIST_ITEMS: Readonly<Record<string, ListItems>> = {
  'Task.incidents': TASK_INCIDENTS,
  'Task.recordings': TASK_RECORDINGS,
  // A task's outputs share its recordings (each is recorded from one): together they list at most its.
  'Output.recordings': TASK_RECORDINGS / CLOUD_ITEMS,
  'Task.outputs': CLOUD_ITEMS,
  'Task.inputs': CLOUD_ITEMS,
  'Output.streams': CLOUD_ITEMS,
  'Task.thumbnails': KEPT.thumbnails,
  'Task.resumes': KEPT.resumes,
  'User.disconnects': KEPT_PER_USER,
  'User.resumes': KEPT_PER_USER,
  'Task.metrics': MAX_POINTS,
  'Query.serviceMetrics': MAX_POINTS,
  // LIVE_START and LIVE_END.
  'Task.missingCallbacks': 2,
  // CALLBACK and FILE_LIST.
  'Recording.seenIn': 2,
  'Query.nodes': 'ids',
  'Query.missingRecordings': 'first',
  'Query.taskCounts': CONFIGURED_ITEMS,
  'Query.upstreams': CONFIGURED_ITEMS,
  'Query.webhookEndpoints': CONFIGURED_ITEMS,
  'WebhookEndpoint.serviceCodes': CONFIGURED_ITEMS,
  'WebhookEndpoint.events': CONFIGURED_ITEMS,
  'Viewer.serviceCodes': CONFIGURED_ITEMS,
  // `operate`, the one permission beyond reading.
  'Viewer.can': 1,
}

/** The items of a list field of `type`; undefined for a field that is no list, or one the table misses. */
export function listItemsOf(type: GraphQLCompositeType, field: GraphQLField<unknown, unknown>): ListItems | undefined {
  if (!isListType(getNullableType(field.type))) return undefined
  if (field.name === 'edges' && type.name.endsWith('Connection')) return 'connection'
  return LIST_ITEMS[`${type.name}.${field.name}`]
}

/** A list field's selection costs once per item it may return; one the table misses, as a page. */
export function listEstimator(defaultPageSize: number): ComplexityEstimator {
  return ({ type, field, args, childComplexity }) => {
    // Introspection's lists are the schema's own, bounded by it: its depth limit holds them.
    if (type.name.startsWith('__') || !isListType(getNullableType(field.type))) return undefined
    const items = listItemsOf(type, field)
    let count: number
    if (items === 'connection') count = 1
    else if (items === 'ids') count = Array.isArray(args.ids) ? args.ids.length : defaultPageSize
    else if (items === 'first') count = typeof args.first === 'number' && args.first >= 0 ? args.first : defaultPageSize
    else count = items ?? defaultPageSize
    return 1 + Math.max(1, childComplexity) * Math.max(1, count)
  }
}

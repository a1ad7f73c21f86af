import type { NonEmptyArray } from '../type-graphql.shim.js'
import { ActionResolver, TaskStopRequestResolver } from './action.resolver.js'
import { IncidentResolver, TaskIncidentsResolver } from './incident.resolver.js'
import {
  AudienceSubscription,
  ServiceAudienceResolver,
  TaskAudienceResolver,
  UpstreamCallbacksResolver,
} from './audience.resolver.js'
import { NodeResolver } from './node.resolver.js'
import { OutputRecordingsResolver, TaskRecordingsResolver, UserRecordingsResolver } from './recording-links.resolver.js'
import { RecordingResolver } from './recording.resolver.js'
import { NotificationResolver } from './notification.resolver.js'
import { RealtimeSubscription } from './realtime.subscription.js'
import { TaskResolver } from './task.resolver.js'
import { TaskTimelineResolver, TimelineEntryResolver } from '../timeline/timeline.resolver.js'
import { TimelineSubscription } from '../timeline/timeline.subscription.js'
import { UpstreamArchiveResolver, UpstreamResolver } from './upstream.resolver.js'
import { UserResolver } from './user.resolver.js'
import { ViewerResolver } from './viewer.resolver.js'
import { InputResolver, MediaFormatResolver, StreamResolver } from './values.resolver.js'
import { WebhookResolver } from './webhook.resolver.js'

/**
 * Every resolver class of the schema. A new resolver is added here, and only here; the server,
 * `livegate schema` and the schema drift test all build from this list.
 */
export const resolvers: NonEmptyArray<Function> = [
  NodeResolver,
  NotificationResolver,
  TaskResolver,
  UserResolver,
  UpstreamResolver,
  UpstreamArchiveResolver,
  RealtimeSubscription,
  MediaFormatResolver,
  StreamResolver,
  InputResolver,
  TaskAudienceResolver,
  ServiceAudienceResolver,
  UpstreamCallbacksResolver,
  AudienceSubscription,
  ActionResolver,
  TaskStopRequestResolver,
  WebhookResolver,
  IncidentResolver,
  TaskIncidentsResolver,
  RecordingResolver,
  TaskRecordingsResolver,
  OutputRecordingsResolver,
  UserRecordingsResolver,
  TaskTimelineResolver,
  TimelineEntryResolver,
  TimelineSubscription,
  ViewerResolver,
]

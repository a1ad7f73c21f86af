import type { MediaFormatNode } from '../../../fold/graph.model.js'
import { Field, Float, Int, ObjectType } from '../type-graphql.shim.js'
import { MediaFormat } from './media-format.type.js'
import { DisconnectReason, ResumeStatus } from './notification.enums.js'
import { NOTIFICATION_TYPE_NAMES, Notification } from './notification.type.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

/**
 * One object type per published notification type, with its typed values. Every typed value is
 * nullable: the service may leave a field out, or send it in a form livegate cannot read, and
 * the notification is kept either way (the value as sent stays in `fields`).
 */

// The values every output notification (types 0, 1, 2) carries about its output format. Never
// in the schema itself: no field returns it, and it implements nothing.
@ObjectType('OutputNotificationBase', { simpleResolvers: true })
abstract class OutputNotification extends Notification {
  @Field(() => DateTimeScalar, { nullable: true, description: 'When the live started, by the service (`created_at`).' })
  createdAt!: Date | null

  @Field(() => Float, { nullable: true, description: 'Video duration as the service gives it (`duration`; its unit is not published).' })
  duration!: number | null

  @Field(() => MediaFormat, { nullable: true, description: 'The output format (`format`), split into container and codecs.' })
  format!: MediaFormatNode | null

  @Field(() => Boolean, { nullable: true, description: 'Whether this is a resumed (continued) live (`is_resume`).' })
  isResume!: boolean | null

  @Field(() => String, { nullable: true, description: 'The label of the output format (`tag`).' })
  tag!: string | null

  @Field(() => String, { nullable: true, description: 'The business text passed through the service (`opaque`), percent-decoded once when it was encoded.' })
  opaque!: string | null

  @Field(() => Boolean, { nullable: true, description: 'Whether the stream is live only, never archived (`live_only`).' })
  liveOnly!: boolean | null
}

/** Type 0: an output format of a live became playable. */
@ObjectType(NOTIFICATION_TYPE_NAMES.LIVE_START, { simpleResolvers: true, implements: Notification, description: 'Type 0: an output format of a live became playable; one per output format.' })
export class LiveStartNotification extends OutputNotification {
  @Field(() => String, { nullable: true, description: 'The live play address (`url`); plays from the newest point.' })
  playUrl!: string | null

  @Field(() => String, { nullable: true, description: 'The time-shift play address (`svod_url`, flv only): plays from the beginning while the live runs.' })
  timeShiftUrl!: string | null

  @Field(() => Int, { nullable: true, description: 'The first number of `size`.' })
  width!: number | null

  @Field(() => Int, { nullable: true, description: 'The second number of `size`.' })
  height!: number | null

  @Field(() => String, { nullable: true, description: 'Where the video is saved, relative (`path`).' })
  path!: string | null

  @Field(() => Int, { nullable: true, description: 'Client type (`ctype`); mobile SDK only.' })
  clientType!: number | null

  @Field(() => String, { nullable: true, description: 'Client version (`cversion`); mobile SDK only.' })
  clientVersion!: string | null
}

/** Type 1: a live ended. */
@ObjectType(NOTIFICATION_TYPE_NAMES.LIVE_END, { simpleResolvers: true, implements: Notification, description: 'Type 1: a live ended.' })
export class LiveEndNotification extends OutputNotification {
  @Field(() => Boolean, { nullable: true, description: 'True when the user stopped shooting; false when the server stopped it for an abnormal reason (`reach_end`).' })
  reachEnd!: boolean | null

  @Field(() => Int, { nullable: true, description: 'Which output format of the live this is about (`output_idx`).' })
  outputIndex!: number | null

  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes sent through live output (`http_output_bytes`); flv only, 0 for other formats.' })
  httpOutputBytes!: number | null

  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes of input of this live (`input_bytes`).' })
  inputBytes!: number | null
}

/** Type 2: an archived (on-demand) file is ready. */
@ObjectType(NOTIFICATION_TYPE_NAMES.ARCHIVED, { simpleResolvers: true, implements: Notification, description: 'Type 2: an archived (on-demand) file is ready.' })
export class ArchivedNotification extends OutputNotification {
  @Field(() => String, { nullable: true, description: 'The on-demand play address (`url`).' })
  playUrl!: string | null

  @Field(() => String, { nullable: true, description: 'The on-demand file name (`file_name`).' })
  fileName!: string | null

  @Field(() => String, { nullable: true, description: 'Where the file is saved, relative (`path`).' })
  path!: string | null

  @Field(() => Int, { nullable: true, description: 'The first number of `size`.' })
  width!: number | null

  @Field(() => Int, { nullable: true, description: 'The second number of `size`.' })
  height!: number | null

  @Field(() => Int, { nullable: true, description: 'Which output format of the live this is (`output_idx`).' })
  outputIndex!: number | null

  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes sent through live output (`http_output_bytes`).' })
  httpOutputBytes!: number | null

  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes of input of the live (`input_bytes`).' })
  inputBytes!: number | null

  @Field(() => Int, { nullable: true, description: 'Client type (`ctype`); mobile SDK only.' })
  clientType!: number | null

  @Field(() => String, { nullable: true, description: 'Client version (`cversion`); mobile SDK only.' })
  clientVersion!: string | null
}

/** Type 9: a thumbnail was taken. */
@ObjectType(NOTIFICATION_TYPE_NAMES.THUMBNAIL, { simpleResolvers: true, implements: Notification, description: 'Type 9: a thumbnail picture was taken.' })
export class ThumbnailNotification extends Notification {
  @Field(() => String, { nullable: true, description: 'The picture\'s download address (`url`).' })
  imageUrl!: string | null

  @Field(() => Int, { nullable: true, description: 'Picture width in pixels (`width`).' })
  width!: number | null

  @Field(() => Int, { nullable: true, description: 'Picture height in pixels (`height`).' })
  height!: number | null

  @Field(() => String, { nullable: true, description: 'The thumbnail file name (`file_name`).' })
  fileName!: string | null

  @Field(() => String, { nullable: true, description: 'Where the picture is saved, relative (`path`).' })
  path!: string | null

  @Field(() => String, { nullable: true, description: 'The business text passed through the service (`opaque`), percent-decoded once when it was encoded.' })
  opaque!: string | null

  @Field(() => Boolean, { nullable: true, description: 'Whether the stream is live only, never archived (`live_only`).' })
  liveOnly!: boolean | null
}

/** Type 8: a mobile client disconnected. */
@ObjectType(NOTIFICATION_TYPE_NAMES.CLIENT_DISCONNECT, { simpleResolvers: true, implements: Notification, description: 'Type 8: a mobile client disconnected (mobile SDK only).' })
export class ClientDisconnectNotification extends Notification {
  @Field(() => Float, { nullable: true, description: 'Time online on one continuous network connection (`session_duration`; its unit is not published).' })
  sessionDuration!: number | null

  @Field(() => DisconnectReason, { nullable: true, description: 'Why it disconnected; null for a code the service does not publish (see disconnectReasonCode).' })
  disconnectReason!: DisconnectReason | null

  @Field(() => Int, { nullable: true, description: '`disconnect_reason` as sent.' })
  disconnectReasonCode!: number | null
}

/** Type 15: a live is waiting for its client to reconnect, or resumed. */
@ObjectType(NOTIFICATION_TYPE_NAMES.LIVE_RESUME, { simpleResolvers: true, implements: Notification, description: 'Type 15: a live is waiting for its client to reconnect, or has resumed.' })
export class LiveResumeNotification extends Notification {
  @Field(() => ResumeStatus, { nullable: true, description: '`status`: WAITING (0) or RESUMED (1).' })
  status!: ResumeStatus | null
}

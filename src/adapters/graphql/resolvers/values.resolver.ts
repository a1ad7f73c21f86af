import type { InputNode, MediaFormatNode, StreamNode } from '../../../fold/graph.model.js'
import { FieldResolver, Int, Resolver, Root } from '../type-graphql.shim.js'
import { MediaContainer, MediaFormat, mediaContainer } from '../types/media-format.type.js'
import { Stream, StreamKind } from '../types/output.type.js'
import { Input } from '../types/task-parts.type.js'

/**
 * The fields of the fold's plain values that the schema shows in another shape: an enum beside a
 * name as sent, one type for one meaning, nothing where a value means "does not apply".
 */
@Resolver(() => MediaFormat)
export class MediaFormatResolver {
  @FieldResolver(() => MediaContainer, {
    description: 'The container, when it is one the service documents; OTHER otherwise (see `containerName`).',
  })
  container(@Root() format: MediaFormatNode): MediaContainer {
    return mediaContainer(format.container)
  }

  @FieldResolver(() => String, { description: 'The container exactly as sent, such as `flv` or `m3u8`.' })
  containerName(@Root() format: MediaFormatNode): string {
    return format.container
  }
}

@Resolver(() => Stream)
export class StreamResolver {
  @FieldResolver(() => StreamKind, {
    description: 'Video, audio, or UNKNOWN for a `codec_type` the service does not publish.',
  })
  kind(@Root() stream: StreamNode): keyof typeof StreamKind {
    return stream.kind ?? 'UNKNOWN'
  }

  // The task list reports 0 for an audio stream's size: no size, not a zero-pixel picture.
  @FieldResolver(() => Int, { nullable: true, description: 'Video width in pixels; null for audio.' })
  width(@Root() stream: StreamNode): number | null {
    return stream.kind === 'AUDIO' ? null : stream.width
  }

  @FieldResolver(() => Int, { nullable: true, description: 'Video height in pixels; null for audio.' })
  height(@Root() stream: StreamNode): number | null {
    return stream.kind === 'AUDIO' ? null : stream.height
  }
}

@Resolver(() => Input)
export class InputResolver {
  @FieldResolver(() => String, {
    nullable: true,
    description: 'The device type (`device_type`), as text like `User.deviceType`.',
  })
  deviceType(@Root() input: InputNode): string | null {
    return input.deviceType === null ? null : String(input.deviceType)
  }
}

import { Field, ObjectType, registerEnumType } from '../type-graphql.shim.js'

/** The containers the service documents (its samples: flv, rtmp, m3u8) and archives in (mp4); any other is OTHER. */
export const MediaContainer = { FLV: 'FLV', RTMP: 'RTMP', M3U8: 'M3U8', MP4: 'MP4', OTHER: 'OTHER' } as const
export type MediaContainer = (typeof MediaContainer)[keyof typeof MediaContainer]

registerEnumType(MediaContainer, {
  name: 'MediaContainer',
  description: 'The container of an output format. A container not listed is OTHER; `containerName` has it as sent.',
  valuesConfig: {
    FLV: { description: '`flv`: HTTP-FLV live and archives.' },
    RTMP: { description: '`rtmp`.' },
    M3U8: { description: '`m3u8`: HLS.' },
    MP4: { description: '`mp4`: archived (on-demand) files.' },
    OTHER: { description: 'A container not listed here; see `containerName`.' },
  },
})

/** The enum value of a container name as sent (case-insensitive). */
export function mediaContainer(name: string): MediaContainer {
  const upper = name.toUpperCase()
  return Object.hasOwn(MediaContainer, upper) && upper !== 'OTHER' ? (upper as MediaContainer) : 'OTHER'
}

/** `format` as the service sends it (`flv/libx264/aac`), split into its three parts. */
@ObjectType('MediaFormat', {
  simpleResolvers: true,
  description: 'An output format: container, video codec, audio codec (`flv/libx264/aac`).',
})
export class MediaFormat {
  @Field(() => String, { description: 'The container exactly as sent, such as `flv` or `m3u8`.' })
  containerName!: string

  @Field(() => MediaContainer, {
    description: 'The container, when it is one the service documents; OTHER otherwise (see `containerName`).',
  })
  container!: MediaContainer

  @Field(() => String, {
    nullable: true,
    description: 'The video codec, such as `libx264`; null when the format names none.',
  })
  videoCodec!: string | null

  @Field(() => String, {
    nullable: true,
    description: 'The audio codec, such as `aac`; null when the format names none.',
  })
  audioCodec!: string | null
}

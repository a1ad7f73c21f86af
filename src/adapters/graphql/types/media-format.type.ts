import { Field, ObjectType } from '../type-graphql.shim.js'

/** `format` as the service sends it (`flv/libx264/aac`), split into its three parts. */
@ObjectType('MediaFormat', { simpleResolvers: true, description: 'An output format: container, video codec, audio codec (`flv/libx264/aac`).' })
export class MediaFormat {
  @Field(() => String, { description: 'The container, such as flv, mp4, m3u8.' })
  container!: string

  @Field(() => String, { nullable: true })
  videoCodec!: string | null

  @Field(() => String, { nullable: true })
  audioCodec!: string | null
}

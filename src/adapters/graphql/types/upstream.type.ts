import { Field, Int, ObjectType } from '../type-graphql.shim.js'
import { DateTimeScalar } from './scalars.type.js'

@ObjectType('UpstreamError', { simpleResolvers: true, description: 'Why the last task list request failed.' })
export class UpstreamErrorInfo {
  @Field(() => DateTimeScalar) at!: Date
  @Field(() => String, { description: 'NOT_CONFIGURED, RET, HTTP, TIMEOUT, NETWORK or INVALID_ANSWER.' }) kind!: string
  @Field(() => String) message!: string
  @Field(() => Int, { nullable: true, description: 'The service\'s non-zero `ret`, for kind RET.' }) ret!: number | null
}

@ObjectType('UpstreamStatus', { simpleResolvers: true, description: 'The health of one service code\'s task list, as livegate last saw it.' })
export class UpstreamStatus {
  @Field(() => String) serviceCode!: string
  @Field(() => Boolean, { description: 'Whether livegate polls this code (it has a baseUrl).' }) configured!: boolean
  @Field(() => Boolean, { description: 'The last request succeeded.' }) healthy!: boolean
  @Field(() => DateTimeScalar, { nullable: true }) lastPollAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true }) lastSuccessAt!: Date | null
  @Field(() => UpstreamErrorInfo, { nullable: true, description: 'The last failure, also after a later success.' }) lastError!: UpstreamErrorInfo | null
  @Field(() => Int, { nullable: true }) lastLatencyMs!: number | null
  @Field(() => Int, { nullable: true, description: 'Tasks in the last successful answer.' }) taskCount!: number | null
  @Field(() => Int, { nullable: true }) userCount!: number | null
}

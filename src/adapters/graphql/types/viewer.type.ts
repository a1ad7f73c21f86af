import { LOCAL_CALLER, type Scope } from '../auth.scope.js'
import { Field, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { DateTimeScalar } from './scalars.type.js'

/** How the caller proved who it is. */
export const ViewerMethod = { KEY: 'KEY', TOKEN: 'TOKEN', LOCAL: 'LOCAL' } as const
export type ViewerMethod = (typeof ViewerMethod)[keyof typeof ViewerMethod]
registerEnumType(ViewerMethod, {
  name: 'ViewerMethod',
  description: 'How the caller proved who it is.',
  valuesConfig: {
    KEY: { description: 'An API key of the configuration (`apiKeys`).' },
    TOKEN: { description: "A signed token of the team's identity provider (`auth.jwt`)." },
    LOCAL: { description: 'The local user of a gateway with neither keys nor tokens, on a loopback address.' },
  },
})

@ObjectType('Viewer', {
  simpleResolvers: true,
  description:
    'Who is asking and what they may do, so a frontend can show who is signed in: a token by its claims, a key by ' +
    'its name, the local user as `local`.',
})
export class Viewer {
  @Field(() => ViewerMethod, { description: 'A key, a token, or the local user.' }) method!: ViewerMethod
  @Field(() => String, {
    description: "Who: the token's `sub`, the key's name, or `local`. What the audit records as who acted.",
  })
  subject!: string
  @Field(() => String, { nullable: true, description: "The token's `name` claim; null for a key." })
  name!: string | null
  @Field(() => String, { nullable: true, description: "The token's issuer (`iss`); null for a key." })
  issuer!: string | null
  @Field(() => [String], {
    nullable: true,
    description: 'The service codes the caller may read; null for every service code.',
  })
  serviceCodes!: string[] | null
  @Field(() => [String], { description: 'What the caller may do beyond reading: `operate` (act on the cloud).' })
  can!: string[]
  @Field(() => String, {
    nullable: true,
    description: "The one broadcaster (the cloud's `user_name`) whose data the caller sees; null for a whole service.",
  })
  userName!: string | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'When the token expires; null for a key.' })
  expiresAt!: Date | null
  @Field(() => String, {
    nullable: true,
    description: "The API key's name; null for a token and for the local user (no keys configured).",
  })
  keyName!: string | null
  @Field(() => Boolean, {
    description:
      'Whether it may act (`stopTask`, `sendMessage`): a key or token with `"can": ["operate"]`, or the local user.',
  })
  canOperate!: boolean
}

const METHODS = { key: ViewerMethod.KEY, token: ViewerMethod.TOKEN, local: ViewerMethod.LOCAL } as const

/** The viewer of a scope: a scope made with no caller (a test's, by hand) reads as its key, or the local user. */
export function viewerOf(scope: Scope): Viewer {
  const caller = scope.caller ?? (scope.keyName ? { method: 'key' as const, subject: scope.keyName } : LOCAL_CALLER)
  return {
    method: METHODS[caller.method],
    subject: caller.subject,
    name: caller.name ?? null,
    issuer: caller.issuer ?? null,
    serviceCodes: scope.kind === 'all' ? null : [...scope.serviceCodes],
    can: scope.canOperate ? ['operate'] : [],
    userName: scope.userName ?? null,
    expiresAt: caller.expiresAt ?? null,
    keyName: scope.keyName ?? null,
    canOperate: scope.canOperate,
  }
}

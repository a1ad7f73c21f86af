import { z } from 'zod'

/**
 * The algorithms a public key may sign with. HMAC is never among them: a token signed with
 * HS256 using a public key as its secret (the classic confusion) is refused by its algorithm.
 */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const

/** A public key in the file: a JWK (its `alg` names what it verifies), or a PEM with its algorithm. */
const publicKeySchema = z.union([
  z.looseObject({
    kty: z.enum(['RSA', 'EC', 'OKP']),
    alg: z.enum(ASYMMETRIC_ALGORITHMS),
    kid: z.string().min(1).optional(),
  }),
  z.strictObject({ pem: z.string().includes('-----BEGIN PUBLIC KEY-----'), alg: z.enum(ASYMMETRIC_ALGORITHMS) }),
])

const jwtSchema = z
  .strictObject({
    /** The identity provider's JWKS, fetched at start and again for an unknown `kid`. */
    jwksUrl: z.url().optional(),
    /** Or the public keys themselves. */
    keys: z.array(publicKeySchema).min(1).optional(),
    /** Or an HS256 secret, from the environment only (a shared secret has no place in a file). */
    secret: z.strictObject({ env: z.string().min(1) }).optional(),
    /** The `iss` every token must name. */
    issuer: z.string().min(1),
    /** The `aud` every token must name (one of them). */
    audience: z.string().min(1),
    /**
     * Which claim `audience` is matched against: `aud`, or `client_id` for a provider whose access
     * tokens name their client there and carry no `aud` (Amazon Cognito).
     */
    audienceClaim: z.enum(['aud', 'client_id']).default('aud'),
    /** The claim holding livegate's object: `{ serviceCodes, can, userName }`. */
    claim: z.string().min(1).default('livegate'),
    /** How far clocks may disagree on `exp` and `nbf`, in seconds. */
    clockToleranceSeconds: z.int().min(0).max(300).default(30),
  })
  .refine((jwt) => [jwt.jwksUrl, jwt.keys, jwt.secret].filter((given) => given !== undefined).length === 1, {
    message: 'give exactly one of "jwksUrl", "keys" or "secret"',
  })

const oidcSchema = z.strictObject({
  /** The provider the dashboard signs in with (its `/.well-known/openid-configuration`). */
  issuer: z.url(),
  /** The dashboard's public client id at the provider. */
  clientId: z.string().min(1),
  /** The scopes the dashboard asks for (space-separated). */
  scope: z.string().min(1).default('openid profile'),
  /** Sent as the authorization request's `audience` (Auth0 issues a JWT access token only for one). */
  audience: z.string().min(1).optional(),
})

/** `auth`: signed tokens from the team's identity provider, beside API keys. */
export const authSchema = z.strictObject({
  jwt: jwtSchema.optional(),
  oidc: oidcSchema.optional(),
})

/** `auth` as written. */
export type AuthFile = z.output<typeof authSchema>

/** `auth.jwt` with its secret read from the environment. */
export type JwtConfig = Omit<NonNullable<AuthFile['jwt']>, 'secret'> & { secret?: string | undefined }

/** `auth` as livegate holds it. */
export interface AuthConfig {
  jwt?: JwtConfig | undefined
  oidc?: AuthFile['oidc']
}

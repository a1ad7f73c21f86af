import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { TokenVerifier } from '../../src/adapters/graphql/token.verifier.js'
import { loadConfig } from '../../src/config/index.js'

// The two ways of naming keys other than a JWKS address (auth.tokens.test.ts runs the JWKS one
// through a gateway): an HS256 secret from the environment, and public keys written in the file.

const ISSUER = 'https://id.test/'
const CLAIMS = { sub: 'u_1', livegate: { serviceCodes: ['TESTING'], userName: 'anchor_07' } }

function jwtConfig(jwt: Record<string, unknown>, env: Record<string, string> = {}) {
  const config = loadConfig({ env, value: { auth: { jwt: { issuer: ISSUER, audience: 'livegate', ...jwt } } } })
  if (!config.auth.jwt) throw new Error('auth.jwt did not load')
  return config.auth.jwt
}

const signed = (alg: string, key: Parameters<SignJWT['sign']>[0], kid?: string) =>
  new SignJWT(CLAIMS)
    .setProtectedHeader({ alg, ...(kid ? { kid } : {}) })
    .setIssuer(ISSUER)
    .setAudience('livegate')
    .setExpirationTime('10m')
    .sign(key)

describe('the token verifier', () => {
  it('with an HS256 secret from the environment: accepts HS256 only', async () => {
    const verifier = new TokenVerifier(jwtConfig({ secret: { env: 'JWT_SECRET' } }, { JWT_SECRET: 's3cret-s3cret' }))
    await verifier.start()
    const token = await signed('HS256', new TextEncoder().encode('s3cret-s3cret'))
    const verified = await verifier.verify(token)
    expect(verified).toMatchObject({ scope: { kind: 'codes', serviceCodes: ['TESTING'], userName: 'anchor_07' } })
    expect(verified).toMatchObject({ scope: { canOperate: false, caller: { method: 'token', subject: 'u_1' } } })
    const { privateKey } = await generateKeyPair('RS256')
    expect(await verifier.verify(await signed('RS256', privateKey))).toEqual({
      reason: 'algorithm not allowed',
      subject: 'u_1',
    })
    expect(await verifier.verify(await signed('HS256', new TextEncoder().encode('another-secret')))).toMatchObject({
      reason: 'bad signature',
    })
  })

  it('with public keys in the file (a PEM, a JWK): accepts what they sign, by the algorithms they name', async () => {
    const rsa = await generateKeyPair('RS256', { extractable: true })
    const ec = await generateKeyPair('ES256', { extractable: true })
    const verifier = new TokenVerifier(
      jwtConfig({
        keys: [
          { pem: await exportSPKI(rsa.publicKey), alg: 'RS256' },
          { ...(await exportJWK(ec.publicKey)), alg: 'ES256', kid: 'ec' },
        ],
      }),
    )
    await verifier.start()
    expect(await verifier.verify(await signed('RS256', rsa.privateKey))).toHaveProperty('scope')
    expect(await verifier.verify(await signed('ES256', ec.privateKey, 'ec'))).toHaveProperty('scope')
    const other = await generateKeyPair('PS256')
    expect(await verifier.verify(await signed('PS256', other.privateKey))).toMatchObject({
      reason: 'algorithm not allowed',
    })
  })

  // Amazon Cognito's access tokens name their app client in `client_id` and carry no `aud`.
  it('with audienceClaim "client_id": the audience is the client_id claim (Cognito access tokens)', async () => {
    const rsa = await generateKeyPair('RS256', { extractable: true })
    const keys = [{ pem: await exportSPKI(rsa.publicKey), alg: 'RS256' }]
    const cognito = (clientId: string) =>
      new SignJWT({ ...CLAIMS, client_id: clientId, token_use: 'access' })
        .setProtectedHeader({ alg: 'RS256' })
        .setIssuer(ISSUER)
        .setExpirationTime('10m')
        .sign(rsa.privateKey)
    const verifier = new TokenVerifier(jwtConfig({ keys, audience: 'app-client-1', audienceClaim: 'client_id' }))
    await verifier.start()
    expect(await verifier.verify(await cognito('app-client-1'))).toHaveProperty('scope')
    expect(await verifier.verify(await cognito('app-client-2'))).toEqual({ reason: 'wrong audience', subject: 'u_1' })
    // By default the audience is `aud`, which such a token does not carry.
    const strict = new TokenVerifier(jwtConfig({ keys, audience: 'app-client-1' }))
    await strict.start()
    expect(await strict.verify(await cognito('app-client-1'))).toMatchObject({ reason: 'wrong audience' })
  })

  it('refuses a configuration naming no keys, or two ways at once', () => {
    expect(() => jwtConfig({})).toThrow(/exactly one of "jwksUrl", "keys" or "secret"/)
    expect(() => jwtConfig({ jwksUrl: 'https://id.test/jwks', secret: { env: 'X' } }, { X: 'x' })).toThrow(
      /exactly one/,
    )
  })
})

import { createHmac } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportSPKI, importJWK, type JWK } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { connectWith, part } from '../support/jwks.server.js'
import { OTHER_RESOURCE } from '../support/oidc.accounts.js'
import { machineToken, type OidcProvider, signInOverHttp, startOidcProvider } from '../support/oidc.flow.js'
import { overSocket } from '../support/socket.execute.js'

// Tokens from a real OpenID provider (`oidc-provider`, its own process): the user signs in through
// the provider's login form, the gateway verifies with the keys it reads from the provider's
// discovery (jwks_uri). The forgeries one can make of the provider's own token are refused here; every
// bad token of the list is refused, over both transports, in auth.tokens.test.ts (against a
// JWKS server of the test's own, where every fault can be signed, expiry and nbf among them).

const VIEWER = '{ viewer { method subject name issuer serviceCodes can userName } }'
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

describe(`tokens from a real OpenID provider process (${driverName})`, () => {
  let db: TestDatabase
  let provider: OidcProvider
  let gateway: Gateway
  let elsewhere: Gateway
  let redirectUri: string

  beforeAll(async () => {
    db = await openTestDatabase()
    const port = await freePort()
    redirectUri = `http://127.0.0.1:${port}/dashboard`
    provider = await startOidcProvider([redirectUri])
    const config = (issuer: string, gatewayPort: number) =>
      loadConfig({
        env: {},
        value: {
          ...TEST_CONFIG,
          port: gatewayPort,
          apiKeys: [{ name: 'ops', key: 'ops-key-oidc', serviceCodes: ['*'] }],
          auth: {
            jwt: { jwksUrl: provider.jwksUri, issuer, audience: 'livegate' },
            oidc: { issuer: provider.issuer, clientId: 'livegate-dashboard' },
          },
        },
      })
    gateway = await startGateway(config(provider.issuer, port), { database: db.database })
    // The same provider's keys, but another issuer expected: every token of this provider is foreign here.
    elsewhere = await startGateway(config('https://id.elsewhere.test/', 0), { database: db.database })
  }, 300_000)

  afterAll(async () => {
    await elsewhere?.close()
    await gateway?.close()
    await provider?.stop()
    await db?.drop()
  })

  it('accepts the token of an operator signed in through the login form, over HTTP and graphql-ws', async () => {
    const token = await signInOverHttp(provider, 'mei.operator', redirectUri)
    const answer = await graphql(gateway, VIEWER, {}, bearer(token))
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data?.viewer).toEqual({
      method: 'TOKEN',
      subject: 'mei.operator',
      name: 'Mei Chen',
      issuer: provider.issuer,
      // Every code ('*'), as for a key of every code.
      serviceCodes: null,
      can: ['operate'],
      userName: null,
    })
    const socket = await overSocket(gateway.url, VIEWER, {}, token)
    expect(socket.errors).toBeUndefined()
    expect(socket.data).toEqual(answer.data)
  })

  it("narrows a broadcaster's token to the user its claim names", async () => {
    const token = await signInOverHttp(provider, 'anchor.07', redirectUri)
    const answer = await graphql(gateway, VIEWER, {}, bearer(token))
    expect(answer.data?.viewer).toMatchObject({
      subject: 'anchor.07',
      serviceCodes: ['TESTING'],
      userName: 'anchor_07',
    })
    const forbidden = await graphql(gateway, '{ upstreams { serviceCode } }', {}, bearer(token))
    expect(forbidden.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
  })

  it('accepts a machine token (client_credentials) over HTTP and graphql-ws', async () => {
    const token = await machineToken(provider)
    const answer = await graphql(gateway, VIEWER, {}, bearer(token))
    expect(answer.data?.viewer).toMatchObject({ method: 'TOKEN', subject: 'livegate-machine', can: [] })
    expect(await connectWith(gateway.url, `Bearer ${token}`)).toEqual({ code: 0, reason: 'acknowledged' })
  })

  it("refuses the provider's token for another audience, and every token where another issuer is expected", async () => {
    const foreign = await machineToken(provider, OTHER_RESOURCE)
    const refused = await graphql(gateway, VIEWER, {}, bearer(foreign))
    expect(refused.status).toBe(401)
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', reason: 'wrong audience' })
    expect(await connectWith(gateway.url, `Bearer ${foreign}`)).toEqual({
      code: 4401,
      reason: 'Unauthorized: wrong audience',
    })

    const token = await signInOverHttp(provider, 'mei.operator', redirectUri)
    const elsewhereAnswer = await graphql(elsewhere, VIEWER, {}, bearer(token))
    expect(elsewhereAnswer.status).toBe(401)
    expect(elsewhereAnswer.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', reason: 'wrong issuer' })
    expect(await connectWith(elsewhere.url, `Bearer ${token}`)).toEqual({
      code: 4401,
      reason: 'Unauthorized: wrong issuer',
    })
  })

  it("refuses forgeries of the provider's token, each with its reason, over HTTP and graphql-ws", async () => {
    const token = await signInOverHttp(provider, 'anchor.07', redirectUri)
    const [header, body, signature] = token.split('.') as [string, string, string]
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>
    // A broadcaster's token made an operator's of every code, signed as the provider signs, or not at all.
    const raised = part({ ...claims, livegate: { serviceCodes: ['*'], can: ['operate'] } })
    const { keys } = (await (await fetch(provider.jwksUri)).json()) as { keys: JWK[] }
    const jwk = keys[0] as JWK
    const pem = await exportSPKI((await importJWK(jwk, jwk.alg ?? 'RS256')) as Parameters<typeof exportSPKI>[0])
    const hmacHeader = part({ alg: 'HS256', kid: jwk.kid, typ: 'JWT' })
    const hmac = createHmac('sha256', pem).update(`${hmacHeader}.${raised}`).digest('base64url')
    const forged: Array<[string, string]> = [
      ['bad signature', `${header}.${raised}.${signature}`],
      ['algorithm not allowed', `${part({ alg: 'none', typ: 'JWT' })}.${raised}.`],
      ['algorithm not allowed', `${hmacHeader}.${raised}.${hmac}`],
      ['too large', `${header}.${part({ ...claims, padding: 'x'.repeat(9 * 1024) })}.${signature}`],
    ]
    for (const [reason, bad] of forged) {
      const answer = await graphql(gateway, VIEWER, {}, bearer(bad))
      expect(answer.status, reason).toBe(401)
      expect(answer.errors?.[0]?.extensions, reason).toMatchObject({ code: 'UNAUTHENTICATED', reason })
      expect(await connectWith(gateway.url, `Bearer ${bad}`), reason).toEqual({
        code: 4401,
        reason: `Unauthorized: ${reason}`,
      })
    }
  })

  it("lets the dashboard fetch from the origins the provider's discovery names (a token endpoint elsewhere)", async () => {
    // As Cognito: the issuer on one origin, its token endpoint on the hosted UI's, another.
    const discovery = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ issuer, token_endpoint: 'https://login.example.test/oauth2/token' }))
    })
    await new Promise<void>((resolve) => discovery.listen(0, '127.0.0.1', resolve))
    const issuer = `http://127.0.0.1:${(discovery.address() as AddressInfo).port}`
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        auth: {
          jwt: { jwksUrl: provider.jwksUri, issuer, audience: 'livegate' },
          oidc: { issuer, clientId: 'livegate-dashboard' },
        },
      },
    })
    const behind = await startGateway(config, { database: db.database })
    try {
      const policy = async () => (await fetch(new URL('/dashboard', behind.url))).headers.get('content-security-policy')
      await expect.poll(policy).toMatch(/connect-src [^;]*https:\/\/login\.example\.test/)
      expect(await policy()).toContain(`connect-src 'self'`)
      expect(await policy()).toContain(issuer)
    } finally {
      await behind.close()
      await new Promise((resolve) => discovery.close(resolve))
    }
  })
})

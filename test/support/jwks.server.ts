import { createServer, type Server } from 'node:http'
import { exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose'
import WebSocket from 'ws'

/** A signing key of the test's provider: its private half signs, its public JWK is served. */
export interface ProviderKey {
  kid: string
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']
  jwk: JWK
  /** The public key as a PEM (what an attacker would use as an HMAC secret). */
  pem: string
}

/** A new RS256 key named `kid`. */
export async function providerKey(kid: string): Promise<ProviderKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }
  return { kid, privateKey, jwk, pem: await exportSPKI(publicKey) }
}

/**
 * The test's identity provider: a real HTTP server answering its JWKS at `/jwks.json`, on a port
 * chosen before it listens (so a gateway can be started while it is down), with keys that can be
 * rotated in while the gateway runs.
 */
export class JwksServer {
  readonly keys: ProviderKey[] = []
  private server: Server | undefined

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/jwks.json`
  }

  /** Starts answering. */
  async up(): Promise<void> {
    const server = createServer((request, response) => {
      if (request.url !== '/jwks.json') return void response.writeHead(404).end()
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ keys: this.keys.map((key) => key.jwk) }))
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.server = server
  }

  async down(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** The claims of a token, and how it is signed. */
export interface TokenSpec {
  key: ProviderKey
  claims?: JWTPayload
  issuer?: string
  audience?: string
  /** Seconds from now; negative for a token already expired. */
  expiresIn?: number
  notBefore?: number
}

/** A signed RS256 token as the provider issues it. */
export function signToken(spec: TokenSpec): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const jwt = new SignJWT(spec.claims ?? {})
    .setProtectedHeader({ alg: 'RS256', kid: spec.key.kid, typ: 'JWT' })
    .setIssuer(spec.issuer ?? ISSUER)
    .setAudience(spec.audience ?? 'livegate')
    .setIssuedAt(now)
    .setExpirationTime(now + (spec.expiresIn ?? 600))
  if (spec.notBefore !== undefined) jwt.setNotBefore(now + spec.notBefore)
  return jwt.sign(spec.key.privateKey)
}

/** The issuer the test's provider signs as. */
export const ISSUER = 'https://id.test/'

/** A JSON object in base64url, as a token's part. */
export const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** Opens a graphql-ws socket with `authorization` in `connection_init`; resolves with how it ended or was acknowledged. */
export function connectWith(baseUrl: string, authorization: string): Promise<{ code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws')
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization } })))
    socket.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack') {
        socket.close(1000)
        resolve({ code: 0, reason: 'acknowledged' })
      }
    })
    socket.on('close', (code, reason) => resolve({ code, reason: String(reason) }))
    socket.on('error', reject)
  })
}

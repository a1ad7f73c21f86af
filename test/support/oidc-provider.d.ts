// The part of `oidc-provider` (which ships no types) that test/support/oidc.provider.ts uses.
declare module 'oidc-provider' {
  interface Grant {
    jti: string
    addOIDCScope(scope: string): void
    addResourceScope(indicator: string, scope: string): void
    save(): Promise<string>
  }
  interface GrantModel {
    new (fields: { accountId: string; clientId: string }): Grant
    find(id: string): Promise<Grant | undefined>
  }
  interface Client {
    clientId: string
    grantTypeAllowed(type: string): boolean
  }
  interface Session {
    accountId?: string
    grantIdFor(clientId: string, grantId?: string): string | undefined
    ensureClientContainer(clientId: string): void
  }
  interface Context {
    oidc: { session?: Session; client?: Client; provider: { Grant: GrantModel } }
  }
  interface Account {
    accountId: string
    claims(): Promise<Record<string, unknown>>
  }
  interface ResourceServer {
    audience: string
    scope: string
    accessTokenFormat: 'jwt' | 'opaque'
    accessTokenTTL?: number
  }
  interface Configuration {
    clients: Array<Record<string, unknown>>
    findAccount(ctx: Context, id: string): Promise<Account | undefined>
    claims: Record<string, string[]>
    scopes: string[]
    features: {
      devInteractions?: { enabled: boolean }
      clientCredentials?: { enabled: boolean }
      rpInitiatedLogout?: { enabled: boolean }
      resourceIndicators?: {
        enabled: boolean
        defaultResource(ctx: Context, client: Client, oneOf?: string): Promise<string | undefined>
        useGrantedResource(ctx: Context): Promise<boolean>
        getResourceServerInfo(ctx: Context, indicator: string, client: Client): Promise<ResourceServer>
      }
    }
    loadExistingGrant(ctx: Context): Promise<Grant | undefined>
    issueRefreshToken(ctx: Context, client: Client): Promise<boolean>
    extraTokenClaims(ctx: Context, token: { accountId?: string }): Promise<Record<string, unknown> | undefined>
    clientBasedCORS(ctx: Context, origin: string): boolean
    ttl: Record<string, number>
  }
  export default class Provider {
    constructor(issuer: string, configuration: Configuration)
    listen(port: number, host: string, listening: () => void): void
  }
  export const errors: { InvalidTarget: new () => Error }
}

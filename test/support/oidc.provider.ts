// A real OpenID provider (`oidc-provider`) as a process of its own, for the tests that sign in:
// `node --import tsx test/support/oidc.provider.ts`, configured by its environment:
//   OIDC_PORT       the port it listens on (its issuer is http://127.0.0.1:<port>)
//   OIDC_REDIRECTS  the dashboard's redirect URIs, space-separated (the gateway's /dashboard)
//   OIDC_TOKEN_TTL  how long an access token lives, in seconds (default 600)
// It prints `oidc provider listening on <issuer>` once it answers. Its login form is the provider's
// own development interaction (any password; the login names one of USERS below, anything else is
// refused by findAccount). Access tokens are JWTs signed with the provider's keys, served at its
// jwks_uri, with livegate's claim added from the user (or from the client, for client_credentials).
import Provider, { errors } from 'oidc-provider'
import { AUDIENCES, DASHBOARD_CLIENT, LIVEGATE_RESOURCE, MACHINE_CLIENT, USERS } from './oidc.accounts.js'

const port = Number(process.env.OIDC_PORT)
const issuer = `http://127.0.0.1:${port}`
const redirects = (process.env.OIDC_REDIRECTS ?? '').split(' ').filter(Boolean)
const tokenTtl = Number(process.env.OIDC_TOKEN_TTL ?? 600)

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: DASHBOARD_CLIENT,
      token_endpoint_auth_method: 'none',
      application_type: 'web',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: redirects,
      post_logout_redirect_uris: redirects,
      scope: 'openid profile livegate',
    },
    {
      client_id: MACHINE_CLIENT.id,
      client_secret: MACHINE_CLIENT.secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: 'livegate',
    },
  ],
  async findAccount(_ctx, id) {
    const user = USERS[id]
    if (!user) return undefined
    return { accountId: id, claims: async () => ({ sub: id, name: user.name }) }
  },
  claims: { openid: ['sub'], profile: ['name'] },
  scopes: ['openid', 'offline_access', 'livegate'],
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf ?? LIVEGATE_RESOURCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        const audience = AUDIENCES[indicator]
        if (!audience) throw new errors.InvalidTarget()
        return { audience, scope: 'livegate', accessTokenFormat: 'jwt', accessTokenTTL: tokenTtl }
      },
    },
  },
  // The dashboard is a first-party client: its grant is made at sign-in, with no consent screen.
  async loadExistingGrant(ctx) {
    const session = ctx.oidc.session
    const client = ctx.oidc.client
    if (!session?.accountId || !client) return undefined
    const existing = session.grantIdFor(client.clientId)
    if (existing) return ctx.oidc.provider.Grant.find(existing)
    const grant = new ctx.oidc.provider.Grant({ accountId: session.accountId, clientId: client.clientId })
    grant.addOIDCScope('openid profile livegate')
    grant.addResourceScope(LIVEGATE_RESOURCE, 'livegate')
    await grant.save()
    session.ensureClientContainer(client.clientId)
    session.grantIdFor(client.clientId, grant.jti)
    return grant
  },
  // The dashboard renews with a refresh token (no iframe, no third-party cookie).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  async extraTokenClaims(_ctx, token) {
    const accountId = token.accountId
    if (accountId) {
      const user = USERS[accountId]
      return user ? { name: user.name, livegate: user.livegate } : undefined
    }
    return { livegate: { serviceCodes: ['*'], can: [] } }
  },
  // The dashboard's origin may call the token endpoint from the page.
  clientBasedCORS: (_ctx, origin) => redirects.some((uri) => new URL(uri).origin === origin),
  ttl: {
    AccessToken: tokenTtl,
    ClientCredentials: tokenTtl,
    Session: 3600,
    Grant: 3600,
    IdToken: tokenTtl,
    RefreshToken: 3600,
  },
})
provider.listen(port, '127.0.0.1', () => console.log(`oidc provider listening on ${issuer}`))

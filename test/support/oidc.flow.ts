import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { freePort } from './free.port.js'
import { ROOT, type ServeProcess, startListeningProcess } from './livegate.process.js'
import { DASHBOARD_CLIENT, LIVEGATE_RESOURCE, MACHINE_CLIENT } from './oidc.accounts.js'

/** The real OpenID provider (test/support/oidc.provider.ts) running as its own process. */
export interface OidcProvider extends ServeProcess {
  issuer: string
  jwksUri: string
  stop(): Promise<void>
}

/** Starts the provider on a free port, its dashboard client redirecting to `redirects`. */
export async function startOidcProvider(redirects: string[], tokenTtlSeconds = 600): Promise<OidcProvider> {
  const port = await freePort()
  const started = await startListeningProcess(
    ['--import', 'tsx', join(ROOT, 'test/support/oidc.provider.ts')],
    {
      ...process.env,
      OIDC_PORT: String(port),
      OIDC_REDIRECTS: redirects.join(' '),
      OIDC_TOKEN_TTL: String(tokenTtlSeconds),
    },
    /oidc provider listening on (http:\/\/\S+)/,
  )
  const discovery = (await (await fetch(`${started.url}/.well-known/openid-configuration`)).json()) as {
    issuer: string
    jwks_uri: string
  }
  return {
    ...started,
    issuer: discovery.issuer,
    jwksUri: discovery.jwks_uri,
    stop: async () => {
      if (started.process.exitCode !== null) return
      const exited = new Promise((resolve) => started.process.once('exit', resolve))
      started.process.kill('SIGTERM')
      await exited
    },
  }
}

/** A machine token (client_credentials) for `resource` (livegate's by default). */
export async function machineToken(provider: OidcProvider, resource = LIVEGATE_RESOURCE): Promise<string> {
  const response = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${MACHINE_CLIENT.id}:${MACHINE_CLIENT.secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'livegate', resource }),
  })
  const answer = (await response.json()) as { access_token?: string }
  if (!answer.access_token) throw new Error(`no token: ${JSON.stringify(answer)}`)
  return answer.access_token
}

// One browser's cookies, by name: enough for the provider's interaction and session cookies.
class CookieJar {
  private readonly cookies = new Map<string, string>()
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const at = pair.indexOf('=')
      this.cookies.set(pair.slice(0, at), pair.slice(at + 1))
    }
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

/**
 * The dashboard's sign-in driven over HTTP as a browser would: the authorization request with
 * PKCE, the provider's login form filled in as `login`, its redirects followed to the code, and
 * the code exchanged for the access token.
 */
export async function signInOverHttp(provider: OidcProvider, login: string, redirectUri: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url')
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  const jar = new CookieJar()
  let next = `${provider.issuer}/auth?${new URLSearchParams({
    client_id: DASHBOARD_CLIENT,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: 'openid profile livegate',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
  })}`
  let form: { action: string; fields: Record<string, string> } | undefined
  // A bounded walk: the authorization request, the form, the resume, the redirect with the code.
  for (let step = 0; step < 8; step += 1) {
    const response = form
      ? await fetch(new URL(form.action, provider.issuer), {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(form.fields),
        })
      : await fetch(next, { redirect: 'manual', headers: { cookie: jar.header() } })
    jar.take(response)
    form = undefined
    const location = response.headers.get('location')
    if (location) {
      next = new URL(location, provider.issuer).href
      if (next.startsWith(redirectUri)) break
      continue
    }
    const html = await response.text()
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (!action || !html.includes('name="login"')) throw new Error(`no login form at ${next}: ${html.slice(-1500)}`)
    form = { action, fields: { prompt: 'login', login, password: 'any' } }
  }
  const code = new URL(next).searchParams.get('code')
  if (!code) throw new Error(`no code in ${next}`)
  const response = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: DASHBOARD_CLIENT,
      code_verifier: verifier,
    }),
  })
  const answer = (await response.json()) as { access_token?: string }
  if (!answer.access_token) throw new Error(`no token: ${JSON.stringify(answer)}`)
  return answer.access_token
}

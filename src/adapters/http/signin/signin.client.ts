// The dashboard's sign-in with the team's OpenID provider (`auth.oidc`, docs/access.md): the
// authorization code flow with PKCE through oidc-client-ts (its prebuilt browser build, served by
// livegate: the `oidc` global), the user kept in this tab's sessionStorage, renewed with the
// provider's refresh token before it expires, and the access token handed to every request and
// socket of the page (dashboard.page.ts: useToken). Loaded only when `auth.oidc` is configured; served
// beside the dashboard's modules (dashboard/signin.client.js), so its import resolves to theirs.
import { $, type Operations, request, say, useToken } from '../dashboard/dashboard.page.js'

interface SignInSettings {
  issuer: string
  clientId: string
  scope: string
  audience?: string
  /** The dashboard's address from this page: the redirect URI registered at the provider. */
  home: string
}
type User = NonNullable<Awaited<ReturnType<InstanceType<typeof oidc.UserManager>['getUser']>>>

// As the page carries them (dashboard.plugin.ts), from the configuration's `auth.oidc`.
const settings = JSON.parse($('dashboard-signin').textContent ?? '{}') as SignInSettings
const signInButton = $<HTMLButtonElement>('sign-in')
const signOutButton = $<HTMLButtonElement>('sign-out')
const whoEl = $('signed-in-as')
// The dashboard's own address (the redirect URI registered at the provider) from the dashboard or
// a task's page, without the code and state the provider sends back; below a proxy's prefix, with it.
const here = new URL(settings.home, new URL(window.location.pathname, window.location.origin)).href
// Where the sign-in began (a task's page, say), to go back to once the provider sent the code home.
const RETURN_STORAGE = 'livegate.dashboard.signin-from'

const manager = new oidc.UserManager({
  authority: settings.issuer,
  client_id: settings.clientId,
  redirect_uri: here,
  post_logout_redirect_uri: here,
  response_type: 'code',
  scope: settings.scope,
  // Auth0 issues a JWT access token only for an API named by `audience`.
  extraQueryParams: settings.audience ? { audience: settings.audience } : {},
  // The tab's storage only: the token goes with the tab, like the key.
  userStore: new oidc.WebStorageStateStore({ store: window.sessionStorage }),
  stateStore: new oidc.WebStorageStateStore({ store: window.sessionStorage }),
  // Renewed a minute before it expires, with the refresh token where the provider gives one.
  automaticSilentRenew: true,
  loadUserInfo: false,
})

type Viewer = Operations['DashboardViewer']['data']['viewer']
const describe = (viewer: Viewer) =>
  `${viewer.name || viewer.subject}${viewer.userName ? ` (broadcaster ${viewer.userName})` : ''}`

/** Shows the signed-in user (who the gateway says the token names), or the Sign in button. */
async function show(user: User | null): Promise<void> {
  signInButton.hidden = user !== null
  signOutButton.hidden = user === null
  whoEl.hidden = user === null
  if (!user) return void (whoEl.textContent = '')
  whoEl.textContent = 'signed in'
  try {
    whoEl.textContent = `Signed in as ${describe((await request('DashboardViewer', {})).viewer)}`
  } catch (error) {
    whoEl.textContent = `Signed in; the gateway said: ${error instanceof Error ? error.message : String(error)}`
  }
}

// A new or renewed token: every part of the page reads again with it.
manager.events.addUserLoaded((user) => {
  useToken(user.access_token)
  void show(user)
})
manager.events.addUserUnloaded(() => {
  useToken('')
  void show(null)
})
// Not renewed in time (the provider gave no refresh token, or refused it): signed out here.
manager.events.addAccessTokenExpired(() => void manager.removeUser())

signInButton.addEventListener('click', () => {
  signInButton.disabled = true
  sessionStorage.setItem(RETURN_STORAGE, window.location.href)
  manager.signinRedirect().catch((error: unknown) => {
    signInButton.disabled = false
    say(`Could not reach the sign-in provider: ${error instanceof Error ? error.message : String(error)}`, 'error')
  })
})

signOutButton.addEventListener('click', async () => {
  const user = await manager.getUser()
  // Forgotten here first, so the tab holds no token whatever the provider does next.
  await manager.removeUser()
  const metadata = await manager.metadataService.getMetadata().catch(() => undefined)
  if (metadata?.end_session_endpoint)
    await manager.signoutRedirect(user?.id_token ? { id_token_hint: user.id_token } : {}).catch(() => undefined)
})

/** On opening: finish a sign-in the provider sent back, else take up the tab's signed-in user. */
async function begin(): Promise<void> {
  const answer = new URLSearchParams(window.location.search)
  if (answer.has('state') && (answer.has('code') || answer.has('error'))) {
    try {
      await manager.signinRedirectCallback()
    } catch (error) {
      say(`Sign-in failed: ${error instanceof Error ? error.message : String(error)}`, 'error')
    }
    // The code is used once; it does not stay in the address (or the history).
    window.history.replaceState(null, '', here)
    const from = sessionStorage.getItem(RETURN_STORAGE)
    sessionStorage.removeItem(RETURN_STORAGE)
    // Back to the page the sign-in began on, if it is another page of this dashboard.
    if (from && from !== here && new URL(from).origin === window.location.origin && from.startsWith(here)) {
      return window.location.replace(from)
    }
  } else if (answer.has('state')) {
    window.history.replaceState(null, '', here)
  }
  const user = await manager.getUser()
  if (user && !user.expired) return show(user)
  if (user) await manager.removeUser()
  else void show(null)
}

void begin()

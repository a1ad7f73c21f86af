// Who the test's OpenID provider (oidc.provider.ts) knows: its users, its clients, its resources.

/** The users of the form: an operator of every code, and a broadcaster of TESTING. */
export const USERS: Record<string, { name: string; livegate: Record<string, unknown> }> = {
  'mei.operator': { name: 'Mei Chen', livegate: { serviceCodes: ['*'], can: ['operate'] } },
  'anchor.07': { name: 'Anchor Seven', livegate: { serviceCodes: ['TESTING'], userName: 'anchor_07' } },
  'anchor.08': { name: 'Anchor Eight', livegate: { serviceCodes: ['TESTING'], userName: 'anchor_08' } },
}
/** The dashboard's public client (authorization code with PKCE, a refresh token to renew). */
export const DASHBOARD_CLIENT = 'livegate-dashboard'
/** A confidential client for machine tokens (client_credentials), and its secret. */
export const MACHINE_CLIENT = { id: 'livegate-machine', secret: 'machine-secret-0b7d4e' }
/** The resource whose tokens livegate accepts (audience `livegate`), and one whose it must not. */
export const LIVEGATE_RESOURCE = 'urn:livegate'
export const OTHER_RESOURCE = 'urn:other-api'
export const AUDIENCES: Record<string, string> = { [LIVEGATE_RESOURCE]: 'livegate', [OTHER_RESOURCE]: 'other-api' }

// oidc-client-ts's prebuilt browser build (dist/browser/oidc-client-ts.min.js), which the dashboard
// loads before signin.client.js with `auth.oidc` only: the global it defines, typed by the package.
import type * as Oidc from 'oidc-client-ts'

declare global {
  const oidc: typeof Oidc
}

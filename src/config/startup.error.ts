/**
 * Why livegate cannot start, as one line an operator can act on: what failed, where, and what to
 * do. The command line prints its message alone (no stack) and exits non-zero.
 */
export class StartupError extends Error {
  override name = 'StartupError'
}

/**
 * A database server's refusal in words: what failed, at which host and port, and what to do.
 * Never the password: only the URL's user, host, port and database name are named.
 */
export function describeConnectionError(error: unknown, url: string): string {
  const at = serverOf(url)
  const fault = rootFault(error)
  const code = fault.code ?? ''
  const message = fault.message ?? ''
  const tls = /sslmode=(require|verify-ca|verify-full)|ssl=true/i.test(url)
  switch (code) {
    case 'ECONNREFUSED':
      return (
        `database server at ${at.hostPort} refused the connection (ECONNREFUSED): is PostgreSQL running and ` +
        `listening there?`
      )
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return `database host "${at.host}" cannot be resolved (${code}): check the host name in the URL`
    case 'CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return (
        `database server at ${at.hostPort} did not answer (${code}): check the host, the port and any firewall ` +
        `between`
      )
    case '28P01':
      return (
        `database server at ${at.hostPort} refused user "${at.user}": password authentication failed (28P01): ` +
        `check the password in the URL`
      )
    case '3D000':
      return (
        `database "${at.database}" does not exist on the server at ${at.hostPort} (3D000): ` +
        `create it (createdb ${at.database}) or fix the URL`
      )
    case '28000':
      if (/no encryption|SSL off|hostssl/i.test(message)) {
        return `database server at ${at.hostPort} requires TLS (28000): add ?sslmode=require to the URL`
      }
      return `database server at ${at.hostPort} refused user "${at.user}" (28000): ${message}`
    case '57P03':
      return `database server at ${at.hostPort} is starting up or shutting down (57P03): try again in a moment`
    case '53300':
      return (
        `database server at ${at.hostPort} has no free connection slots (53300): raise max_connections or lower ` +
        `other clients' pools`
      )
    default:
      break
  }
  if (/SSL|TLS|EPROTO|secure TLS connection/i.test(`${code} ${message}`) || (tls && code === 'ECONNRESET')) {
    return (
      `database server at ${at.hostPort}: the TLS connection failed (${code || message}): the server may not offer ` +
      `TLS; drop sslmode from the URL or enable ssl on the server`
    )
  }
  return `database server at ${at.hostPort}: ${code ? `${code}: ` : ''}${message || String(error)}`
}

interface Fault {
  code?: string
  message?: string
}

// Drizzle wraps a driver's error (`Failed query: …`) with the real one as its cause.
function rootFault(error: unknown): Fault {
  let current: unknown = error
  for (let depth = 0; depth < 8 && current; depth++) {
    const candidate = current as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown }
    if (typeof candidate.code === 'string' && candidate.code !== '')
      return { code: candidate.code, message: String(candidate.message ?? '') }
    // An AggregateError of connection attempts (IPv4 and IPv6): the first names the fault.
    if (Array.isArray(candidate.errors) && candidate.errors.length > 0) current = candidate.errors[0]
    else if (candidate.cause) current = candidate.cause
    else return { message: typeof candidate.message === 'string' ? candidate.message : String(current) }
  }
  return {}
}

function serverOf(url: string): { host: string; hostPort: string; user: string; database: string } {
  try {
    const parsed = new URL(url)
    const host = decodeURIComponent(parsed.hostname) || 'localhost'
    const port = parsed.port || '5432'
    return {
      host,
      hostPort: `${host.includes(':') ? `[${host}]` : host}:${port}`,
      user: decodeURIComponent(parsed.username) || 'postgres',
      database: decodeURIComponent(parsed.pathname.slice(1)) || decodeURIComponent(parsed.username) || 'postgres',
    }
  } catch {
    return { host: '?', hostPort: '?', user: '?', database: '?' }
  }
}

// The codes of a database that cannot be reached or is going away, rather than of a statement it
// refused: the driver's own for a connection the server closed (not CONNECTION_ENDED or _DESTROYED:
// those are a pool this process closed, a fault of ours), the socket's, SQLSTATE class 08
// (connection exception: PgBouncer's "server login failing" and "no server" too), 57P01-57P03 (the
// server shutting down, crashed, or starting up) and 53300 (no free slots).
const UNREACHABLE_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
])

/** Whether an error says the database could not be reached (try again later), not that a statement was wrong. */
export function isDatabaseUnreachable(error: unknown): boolean {
  const code = rootFault(error).code
  return code !== undefined && (UNREACHABLE_CODES.has(code) || code.startsWith('08'))
}

/** What a statement's data made the database refuse: its SQLSTATE and the server's words. */
export interface DataFault {
  code: string
  message: string
}

// SQLSTATE classes a statement fails with for the values it was given, every time it is run with
// them: 22 (data exception: out of range, untranslatable character, bad time) and 54 (program
// limit exceeded: an index row too large). Anything else (a connection lost, a serialization
// failure, a server shutting down) may pass when tried again.
const DATA_CLASSES = new Set(['22', '54'])

/** The fault when a statement failed for the values it was given, else undefined (try it again). */
export function dataFault(error: unknown): DataFault | undefined {
  const fault = rootFault(error)
  if (!fault.code || !DATA_CLASSES.has(fault.code.slice(0, 2))) return undefined
  // The server's message names the value and the limit, never the statement or its parameters.
  return { code: fault.code, message: (fault.message ?? '').slice(0, 300) }
}

/**
 * Waits for statements sent together on one transaction, and fails with the most telling failure:
 * once one statement fails, the others fail too ("current transaction is aborted"), in whatever
 * order their answers come, and the data fault that caused them is what a caller must see.
 */
export async function allStatements(statements: ReadonlyArray<Promise<unknown> | undefined>): Promise<void> {
  const settled = await Promise.allSettled(statements)
  const failures = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []))
  if (failures.length > 0) throw failures.find((failure) => dataFault(failure)) ?? failures[0]
}

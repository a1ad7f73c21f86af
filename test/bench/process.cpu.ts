import { readdirSync, readFileSync } from 'node:fs'

/**
 * utime + stime of a /proc stat file, in ms (clock ticks of 10 ms on Linux), with cutime + cstime
 * (children that ended and were reaped) when asked; NaN when unreadable.
 */
function statCpuMs(path: string, endedChildren = false): number {
  try {
    const stat = readFileSync(path, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (
      (Number(fields[11]) + Number(fields[12]) + (endedChildren ? Number(fields[13]) + Number(fields[14]) : 0)) * 10
    )
  } catch {
    return Number.NaN
  }
}

/**
 * CPU time of this process's main thread, where the in-process servers under test run (the load
 * comes from processes of its own). Unlike throughput it hardly moves with a neighbour's load, so it
 * says where a gap comes from. Linux only; NaN elsewhere.
 */
export function mainThreadCpuMs(): number {
  return statCpuMs(`/proc/self/task/${process.pid}/stat`)
}

/** CPU time of a whole process (every thread), e.g. a spawned `livegate serve`. */
export function processCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`)
}

/** This process and its children that have ended: the bench with its finished load generators. */
export function selfAndEndedChildrenCpuMs(): number {
  return statCpuMs('/proc/self/stat', true)
}

/** A process and every process below it (a `serve --workers N` primary and its workers). */
export function treePids(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
    return [pid, ...children.flatMap(treePids)]
  } catch {
    return [pid]
  }
}

/** CPU time of a process tree, every thread of every process; a worker replaced meanwhile is not counted. */
export function treeCpuMs(pid: number): number {
  return treePids(pid).reduce((total, member) => total + (processCpuMs(member) || 0), 0)
}

/**
 * CPU time of the PostgreSQL server on this machine listening on `port`: its postmaster and
 * every process it started (backends, WAL writer, checkpointer). NaN when it is elsewhere.
 * With `database`, the backends of other databases are left out (a server shared with other
 * work, as `BENCH_DATABASE_URL` may be): what is counted is that database's backends and
 * autovacuum workers, and the server's own processes whole (the WAL writer writes for all).
 */
export function postgresCpuMs(port: string, database?: string): number {
  try {
    const stats = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
          const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
          return {
            pid: Number(pid),
            ppid: Number(fields[1]),
            ms: (Number(fields[11]) + Number(fields[12])) * 10,
            cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8'),
          }
        } catch {
          return undefined
        }
      })
      .filter((entry) => entry !== undefined)
    const postmaster = stats.find(
      (entry) => /\/postgres\u0000/.test(entry.cmdline) && entry.cmdline.includes(`\u0000-p\u0000${port}\u0000`),
    )
    if (!postmaster) return Number.NaN
    const counted = (entry: (typeof stats)[number]) => {
      if (entry.pid === postmaster.pid) return true
      if (entry.ppid !== postmaster.pid) return false
      return database === undefined || ofDatabase(entry.cmdline, database)
    }
    return stats.filter(counted).reduce((sum, entry) => sum + entry.ms, 0)
  } catch {
    return Number.NaN
  }
}

// A server process's title: a backend's is `postgres: <user> <database> <client> <state>`, an
// autovacuum worker's `postgres: autovacuum worker <database>`; the server's own name no database.
const SERVER_OWN = new RegExp(
  `^postgres: (${[
    'walwriter',
    'checkpointer',
    'background writer',
    'autovacuum launcher',
    'logical replication launcher',
    'archiver',
    'stats collector',
  ].join('|')})`,
)

function ofDatabase(cmdline: string, database: string): boolean {
  const title = cmdline.replace(/\u0000/g, ' ').trim()
  if (SERVER_OWN.test(title)) return true
  const words = title.split(/\s+/)
  return words[0] === 'postgres:' && (words[2] === database || (words[1] === 'autovacuum' && words[3] === database))
}

import { setFlagsFromString } from 'node:v8'

/**
 * V8 settings a gateway process needs, set from the process entry before any load (main.ts; the
 * bench's in-process gateway calls this too, as a deployment's process would have).
 *
 * V8 13.6 (Node 24) raised `scavenger_max_new_space_capacity_mb` from 8 to 32 (V8 commit
 * 789b37d5db1f). With it, the young generation's trigger for ArrayBuffer memory moved from 32 MB
 * to 128 MB, above the fixed 64 MB external-memory limit that starts a full mark-compact: the
 * short-lived Buffers of every request (socket reads, bodies, the driver's messages) are then
 * reclaimed by full collections instead of scavenges (nodejs/node#61967, #63863). Under ingest the
 * gateway ran about one mark-compact a second, each a pause of 30–60 ms plus concurrent marking on
 * cores the load needs, and the projection's lag p99 was several times Node 20's. 8 MB is the value
 * of every V8 before 13.6 (Node 20 and 22), so this restores their collector's shape; the
 * young generation's own size (`--max-semi-space-size`) is not touched.
 */
const SCAVENGER_FLAG = '--scavenger-max-new-space-capacity-mb'
const SCAVENGER_MB = 8

/** What the process runs on, as main.ts reads it. */
export interface RuntimeFacts {
  /** `process.versions.v8`. */
  v8: string
  /** `process.execArgv`: a flag given there wins over ours. */
  execArgv: readonly string[]
}

/** The V8 flags this process should be given, on this V8 and with these arguments. */
export function runtimeFlags(facts: RuntimeFacts): string[] {
  const [major = 0, minor = 0] = facts.v8.split('.').map(Number)
  // Older V8s do not know the flag (Node 20 prints an error for it) and already scavenge so.
  if (major < 13 || (major === 13 && minor < 6)) return []
  const given = facts.execArgv.some((arg) => arg.replaceAll('_', '-').startsWith(SCAVENGER_FLAG))
  return given ? [] : [`${SCAVENGER_FLAG}=${SCAVENGER_MB}`]
}

/** Sets {@link runtimeFlags}; resolves to what it set (none where nothing was needed). */
export function applyRuntimeSettings(facts: RuntimeFacts): string[] {
  const flags = runtimeFlags(facts)
  for (const flag of flags) setFlagsFromString(flag)
  return flags
}

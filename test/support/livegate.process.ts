import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { signCallback } from '../../src/model/callback.sign.js'

/** The repository root, where the tests run livegate from. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** How to run the livegate command from source: `node ...LIVEGATE_COMMAND serve`. */
export const LIVEGATE_COMMAND = ['--import', 'tsx', join(ROOT, 'src/main.ts')]

// How long a start may take before a test gives up: a limit against hanging, not a measure.
const START_LIMIT_MS = 540_000

/** A `livegate serve` process, its base URL, and everything it has printed so far. */
export interface ServeProcess {
  process: ChildProcess
  url: string
  output(): string
}

/** Starts `livegate serve` as its own process and resolves once it says where it listens. */
export async function startServeProcess(args: string[], env: NodeJS.ProcessEnv): Promise<ServeProcess> {
  return startListeningProcess([...LIVEGATE_COMMAND, 'serve', ...args], env, /livegate listening on (http:\/\/[^,\s]+)/)
}

/**
 * Starts a Node process (`node ...args`, from the repository root unless `cwd` says where) and
 * resolves once its output matches `listening`, whose first group is the URL it serves.
 */
export async function startListeningProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  listening: RegExp,
  cwd = ROOT,
): Promise<ServeProcess> {
  const child = spawn(process.execPath, args, { cwd, env })
  let printed = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    printed += chunk
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    printed += chunk
  })
  const url = await new Promise<string>((resolve, reject) => {
    // Generous: a first start on a fresh data directory runs initdb, slow on a busy machine.
    const timer = setTimeout(
      () => reject(new Error(`no address within ${START_LIMIT_MS / 1000} s in: ${printed}`)),
      START_LIMIT_MS,
    )
    const look = () => {
      const match = listening.exec(printed)
      if (!match) return
      clearTimeout(timer)
      child.stdout?.off('data', look)
      resolve(match[1] as string)
    }
    child.stdout?.on('data', look)
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${printed}`)))
  }).catch((error: unknown) => {
    // A start that did not finish leaves no process behind for the caller to forget.
    child.kill('SIGKILL')
    throw error
  })
  return { process: child, url, output: () => printed }
}

/**
 * Signs `fields` as the test services' secret does and posts them to `url`'s callback route on a
 * connection of its own, so that node:cluster may hand it to any worker; the answer's status.
 */
export async function postCallbackOnce(url: string, fields: Record<string, string>, secret: string): Promise<number> {
  const signed = signCallback(fields, {
    url: `${url}/callbacks`,
    method: 'POST',
    secret,
    headerPrefix: 'svc',
    nowMs: Date.now(),
  })
  const answer = await fetch(signed.url, {
    method: 'POST',
    headers: { ...signed.headers, connection: 'close' },
    body: signed.body ?? null,
  })
  await answer.text()
  return answer.status
}

import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { ListedFile } from '../../src/simulator/list-files.answer.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { startTaskListServer } from '../../src/simulator/task-list.server.js'

/** The simulated cloud in a process of its own, its archive per service code fixed at start. */
export interface ArchiveCloud {
  url: string
  /** How many `list_files` requests it answered. */
  managementRequests(): Promise<number>
  stop(): Promise<void>
}

interface Start {
  services: Array<{ serviceCode: string; secret: string }>
  files: Record<string, ListedFile[]>
}

type Reply = { url: string } | { managementRequests: number }

/**
 * Starts the simulator's signed cloud (src/simulator, task-list.server.ts, which serves
 * `list_files` as the cloud does: it checks the signature over the raw body and types every
 * value) in a child process, so what it spends answering is never counted as livegate's CPU.
 */
export function startArchiveCloud(start: Start): Promise<ArchiveCloud> {
  // This TypeScript file is the child's entry, run through tsx as the bench itself is.
  const child = fork(fileURLToPath(import.meta.url), [CLOUD_CHILD], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
  const next = () =>
    new Promise<Reply>((resolve, reject) => {
      child.once('message', (reply: Reply) => resolve(reply))
      child.once('error', reject)
    })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the simulated cloud exited with ${code}`)))
    void next().then((reply) => {
      if (!('url' in reply)) return reject(new Error('the simulated cloud sent no URL'))
      resolve({
        url: reply.url,
        async managementRequests() {
          const counted = next()
          child.send('count')
          const answer = await counted
          return 'managementRequests' in answer ? answer.managementRequests : Number.NaN
        },
        async stop() {
          child.removeAllListeners('exit')
          const exited = new Promise((done) => child.once('exit', done))
          child.kill()
          await exited
        },
      })
    }, reject)
    child.send(start)
  })
}

const CLOUD_CHILD = '--livegate-bench-archive-cloud'

if (process.argv.includes(CLOUD_CHILD) && process.send) {
  process.once('message', (start: Start) => {
    void startTaskListServer({
      services: start.services,
      source: () => EMPTY_TASK_LIST,
      files: (serviceCode) => start.files[serviceCode] ?? [],
    }).then((server) => {
      process.on('message', () => process.send?.({ managementRequests: server.managementRequests }))
      process.send?.({ url: server.url })
    })
  })
}

import { createServer } from 'node:net'

/**
 * A port nothing listens on: bound once by the system's choice on loopback, then released.
 * For a process whose address must be known before it starts (a simulator the gateway polls, a
 * PostgreSQL cluster, a `serve` process); another process could take it in between, which the
 * tests accept as a start failure, never a wrong answer.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.on('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

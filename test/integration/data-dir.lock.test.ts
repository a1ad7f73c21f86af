import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { StartupError } from '../../src/config/index.js'
import { LOCK_FILE, lockDataDir } from '../../src/storage/data-dir.lock.js'
import { prettyLineOf } from '../../src/adapters/ops/log.pretty.js'

const freshDir = () => mkdtempSync(join(tmpdir(), 'livegate-lock-'))
// Above the kernel's pid_max: no process has it.
const DEAD_PID = 4_194_305

describe('the data directory lock', () => {
  it('names its holder, refuses a second holder, and is gone once released', () => {
    const dir = freshDir()
    const lock = lockDataDir(dir, 'serve')
    const holder = JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as Record<string, unknown>
    expect(holder).toMatchObject({ pid: process.pid, host: hostname(), command: 'serve' })
    expect(() => lockDataDir(dir, 'migrate')).toThrowError(StartupError)
    expect(() => lockDataDir(dir, 'migrate')).toThrowError(
      new RegExp(`in use by livegate serve \\(pid ${process.pid}, since `),
    )
    lock.release()
    expect(readdirSync(dir)).toEqual([])
    lockDataDir(dir, 'migrate').release()
  })

  it('takes over the lock of a process that is gone, and leaves no takeover marker', () => {
    const dir = freshDir()
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: DEAD_PID, host: hostname(), command: 'serve', since: 'then', token: 'old' }),
    )
    const lock = lockDataDir(dir, 'serve')
    expect(readdirSync(dir)).toEqual([LOCK_FILE])
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid })
    lock.release()
  })

  it.runIf(process.platform === 'linux')(
    'takes over the lock of a process killed but not reaped (a zombie)',
    async () => {
      // `sleep 0.05` runs in the background of a shell that then becomes `sleep 5`, which never
      // reaps it: it stays a zombie until the parent ends.
      const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] })
      try {
        const [line] = (await once(parent.stdout, 'data')) as [Buffer]
        const zombie = Number(line.toString().trim())
        await expect
          .poll(() => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]?.[0], { timeout: 5000 })
          .toBe('Z')
        const dir = freshDir()
        writeFileSync(
          join(dir, LOCK_FILE),
          JSON.stringify({ pid: zombie, host: hostname(), command: 'serve', since: 'then', token: 'old' }),
        )
        const lock = lockDataDir(dir, 'serve')
        expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid })
        lock.release()
      } finally {
        parent.kill('SIGKILL')
      }
    },
  )

  it("does not take over another host's lock, and says how to clear it", () => {
    const dir = freshDir()
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: DEAD_PID, host: 'elsewhere', command: 'serve', since: 'then', token: 'x' }),
    )
    expect(() => lockDataDir(dir, 'serve')).toThrowError(
      /on host elsewhere \(delete .*livegate\.lock if that process is surely gone\)/,
    )
  })

  it('treats an unreadable lock as stale, but a takeover under way as busy', () => {
    const dir = freshDir()
    writeFileSync(join(dir, LOCK_FILE), 'not json')
    lockDataDir(dir, 'serve').release()
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: DEAD_PID, host: hostname(), command: 'serve', since: 'then', token: 'old' }),
    )
    writeFileSync(join(dir, `${LOCK_FILE}.takeover`), '1\n')
    expect(() => lockDataDir(dir, 'serve')).toThrowError(/being taken over by another process/)
  })
})

describe('readable log lines', () => {
  it('show time, level, message and the other fields on one line; an error with its stack', () => {
    const prettyLine = prettyLineOf(false)
    const time = Date.UTC(2026, 0, 2, 3, 4, 5, 678)
    expect(
      prettyLine(
        JSON.stringify({
          level: 30,
          time,
          pid: 1,
          hostname: 'h',
          msg: 'request answered',
          url: '/graphql',
          statusCode: 200,
        }),
      ),
    ).toMatch(/^\[\d\d:\d\d:05\.678\] INFO: request answered \{"url":"\/graphql","statusCode":200\}\n$/)
    const failed = prettyLine(
      JSON.stringify({
        level: 50,
        time,
        msg: 'failed',
        err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' },
      }),
    )
    expect(failed).toMatch(/^\[[\d:.]+\] ERROR: failed/)
    expect(failed).toContain('Error: boom\n')
    expect(prettyLine('plain text')).toBe('plain text\n')
  })

  it('are coloured only when asked', () => {
    const line = JSON.stringify({ level: 40, time: 0, msg: 'slow' })
    expect(prettyLineOf(true)(line)).toContain('\u001b[')
    expect(prettyLineOf(false)(line)).not.toContain('\u001b[')
  })
})

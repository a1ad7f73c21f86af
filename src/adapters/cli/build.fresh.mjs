#!/usr/bin/env node
// `npm start`, `npm run demo` and `npm run livegate` run the compiled gateway in dist/, built once
// at install (`prepare`) and again only when a source is newer than the build: a start costs a
// stat of each source file, not a compile. Then it runs `dist/main.js` with the same arguments.
// The pages' browser scripts (src/adapters/http/{dashboard,playground,signin,taskpage}) are a second compile, with
// the DOM, into dist/pages/ (src/adapters/http/pages.tsconfig.json), as `npm run build` does.
// `--build` (the prepare script) only builds, and skips quietly where TypeScript is not installed
// (an install without dev dependencies, which runs a dist/ built elsewhere).
// Every build ends here (`npm run build` too, so `prepack` after it deletes dist/): tsc writes
// dist/main.js without an execute bit, and the bin npm links to it (`npx livegate` in a checkout)
// is run as a file, not through node.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, readdirSync, statSync, utimesSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const main = join(root, 'dist', 'main.js')

function newest(path) {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let latest = stat.mtimeMs
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)))
  return latest
}

function builtAt() {
  try {
    return statSync(main).mtimeMs
  } catch {
    return -1
  }
}

const buildOnly = process.argv[2] === '--build'
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const sources = Math.max(newest(join(root, 'src')), newest(join(root, 'tsconfig.json')))
if (builtAt() < sources && !(buildOnly && !existsSync(tsc))) {
  process.stderr.write(
    builtAt() < 0
      ? 'livegate: building dist/ (once)…\n'
      : 'livegate: sources changed since the last build; building dist/…\n',
  )
  let build = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' })
  if (build.status === 0)
    build = spawnSync(process.execPath, [tsc, '-p', join(root, 'src', 'adapters', 'http', 'pages.tsconfig.json')], {
      stdio: 'inherit',
    })
  if (build.status !== 0) {
    process.stderr.write('livegate: the build failed (above); fix it, or run `npm run build` to see it again\n')
    process.exit(build.status ?? 1)
  }
  // An incremental build that found nothing to emit leaves main.js as it was: mark it fresh.
  const now = new Date()
  utimesSync(main, now, now)
}
if (existsSync(main) && (statSync(main).mode & 0o111) === 0) chmodSync(main, statSync(main).mode | 0o755)
if (!buildOnly) await import(pathToFileURL(main).href)

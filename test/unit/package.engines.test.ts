import { readFileSync } from 'node:fs'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

// A clean `npm ci` on every supported Node prints no EBADENGINE warning: every package the lockfile
// installs, development ones included, accepts the oldest and the newest Node livegate supports.
// PostGraphile, which wants Node 22, is the bench's alone and lives in test/bench/peer/, installed
// by the bench on demand; `overrides` in package.json hold codegen's fetch and listr2 on lines
// that accept Node 20.

type Lock = { packages: Record<string, { version?: string; engines?: { node?: string } | string[] }> }

const read = (path: string) => JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'))
const lock: Lock = read('package-lock.json')
const ours: { engines: { node: string } } = read('package.json')

/** The Node lines livegate supports (docs/install.md): the oldest, 22, and the newest. */
const NODES = ['20.19.0', '22.13.0', '24.0.0']

describe('the packages npm installs accept every supported Node', () => {
  it("livegate's own engines accept them", () => {
    for (const node of NODES) expect(semver.satisfies(node, ours.engines.node), node).toBe(true)
  })

  it.each(NODES)('every package of package-lock.json accepts Node %s', (node) => {
    const refused = Object.entries(lock.packages).flatMap(([path, entry]) => {
      // An old lockfile form could write engines as a list; npm reads only the object's `node`.
      const wanted = Array.isArray(entry.engines) ? undefined : entry.engines?.node
      if (path === '' || wanted === undefined) return []
      return semver.satisfies(node, wanted) ? [] : [`${path}@${entry.version}: node ${wanted}`]
    })
    expect(refused).toEqual([])
  })

  it('the lockfile holds no package of the bench peer', () => {
    expect(
      Object.keys(lock.packages).filter((path) => /node_modules\/(postgraphile|grafast|grafserv)$/.test(path)),
    ).toEqual([])
  })
})

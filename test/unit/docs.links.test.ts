import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { HELP } from '../../src/adapters/cli/command.help.js'

// The guide is the README and the pages of docs/: every page is reachable from the README, and
// every relative link in them (a file, a folder, a #heading) leads somewhere, so a page moved or a
// heading renamed fails here, not in a reader's browser.

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`)
const GUIDE = ['README.md', 'CHANGELOG.md', 'src/README.md', ...DOCS]

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

/** The text outside fenced code blocks, where links and headings are Markdown. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '')

/** GitHub's anchor of a heading: its text, lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** Every anchor of a page, numbered as GitHub numbers a heading that comes again. */
function anchors(path: string): Set<string> {
  const seen = new Map<string, number>()
  const found = new Set<string>()
  for (const match of prose(read(path)).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1] as string)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    found.add(count === 0 ? base : `${base}-${count}`)
  }
  return found
}

/** The relative links of a page: where each points, as a path from the root, and its anchor. */
function links(path: string): Array<{ link: string; file: string; anchor: string }> {
  return [...prose(read(path)).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] as string)
    .filter((link) => !/^[a-z]+:/.test(link))
    .map((link) => {
      const [target = '', anchor = ''] = link.split('#')
      const file = target === '' ? path : relative(ROOT, join(ROOT, dirname(path), target))
      return { link, file, anchor }
    })
}

describe('the guide: README.md and docs/', () => {
  it('has pages in docs/, and the README within 250 lines', () => {
    expect(DOCS.length).toBeGreaterThan(10)
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250)
  })

  it('reaches every page of docs/ from the README, by its links', () => {
    const reached = new Set(['README.md'])
    const queue = ['README.md']
    for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
      for (const { file } of links(path)) {
        if (file.endsWith('.md') && !reached.has(file) && existsSync(join(ROOT, file))) {
          reached.add(file)
          queue.push(file)
        }
      }
    }
    expect(DOCS.filter((page) => !reached.has(page))).toEqual([])
  })

  it.each(GUIDE)('%s: every relative link leads to a file and a heading that exist', (path) => {
    const broken = links(path).filter(({ file, anchor }) => {
      if (!existsSync(join(ROOT, file))) return true
      if (anchor === '') return false
      return !(file.endsWith('.md') && statSync(join(ROOT, file)).isFile() && anchors(file).has(anchor))
    })
    expect(broken.map(({ link }) => link)).toEqual([])
  })

  it('finds the anchors GitHub makes', () => {
    expect(slug("Freshness: what the cloud's `task_list` last said")).toBe(
      'freshness-what-the-clouds-task_list-last-said',
    )
    expect(slug('Several workers (`serve --workers N`)')).toBe('several-workers-serve---workers-n')
  })
})

/** The guide's code: fenced blocks and `inline` spans, where commands are written to be run. */
const codeOf = (text: string) =>
  [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```|`([^`\n]+)`/gm)].map((match) => match[1] ?? match[2] ?? '')

describe('the commands the guide tells a user to run', () => {
  const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts)
  const code = ['README.md', ...DOCS].flatMap((path) => codeOf(read(path)).map((text) => ({ path, text })))

  it('every `npm run <script>` is a script of package.json', () => {
    const named = code.flatMap(({ path, text }) =>
      [...text.matchAll(/npm run(?: -s| --silent)? ([\w:-]+)/g)].map((match) => `${path}: ${match[1]}`),
    )
    expect(named.length).toBeGreaterThan(5)
    expect(named.filter((entry) => !scripts.includes(entry.split(': ')[1] as string))).toEqual([])
  })

  it('every `livegate <command>` is a command livegate has', () => {
    const named = code.flatMap(({ path, text }) =>
      [...text.matchAll(/(?<![=\w/.-])livegate ([a-z][\w-]*)/g)].map((match) => `${path}: ${match[1]}`),
    )
    expect(named.length).toBeGreaterThan(5)
    expect(named.filter((entry) => !Object.hasOwn(HELP, entry.split(': ')[1] as string))).toEqual([])
  })
})

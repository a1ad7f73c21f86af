import { isDeepStrictEqual } from 'node:util'
import type { LoadRequest } from './load.generate.js'
import { ARCHIVE_USERS, userName } from './archive.seed.js'

/**
 * A catalogue page as a viewer's "my recordings" shows it: the newest 50 of one user, with what
 * each card shows and the count, and the cursor for the next page.
 */
export const RECORDING_PAGE_QUERY = `query RecordingPage(
  $userName: String!, $serviceCode: String, $first: Int, $after: String
) {
  recordings(first: $first, after: $after, filter: { userName: $userName, serviceCode: $serviceCode }) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { id fileName playUrl userName views likes createdAt seenIn } }
  }
}`

/** The users a pool asks for: spread over the thousand. */
const USERS = 40
/** Of them, how many are asked for their second page too. */
const SECOND_PAGES = 10

function body(variables: Record<string, unknown>): LoadRequest {
  const bytes = Buffer.from(JSON.stringify({ operationName: 'RecordingPage', query: RECORDING_PAGE_QUERY, variables }))
  const headers = { 'content-type': 'application/json', 'content-length': String(bytes.length) }
  return { path: '/graphql', headers, body: bytes }
}

/** One request of a pool, answered: its HTTP status and JSON. */
export async function post(url: string, request: LoadRequest): Promise<{ status: number; json: any }> {
  const { headers, body } = request
  const response = await fetch(new URL(request.path, url), { method: 'POST', headers, body })
  return { status: response.status, json: await response.json() }
}

/**
 * First pages of 40 users and the second pages of ten of them (livegate's own `endCursor`): by
 * user alone, or by service code and user when `serviceCode` is given.
 */
export async function recordingPool(livegateUrl: string, serviceCode?: string): Promise<LoadRequest[]> {
  const code = serviceCode === undefined ? {} : { serviceCode }
  const users = Array.from({ length: USERS }, (_, i) => userName(Math.floor((i * ARCHIVE_USERS) / USERS) + 7))
  const pool = users.map((user) => body({ userName: user, ...code, first: 50 }))
  for (const [i, user] of users.slice(0, SECOND_PAGES).entries()) {
    const answer = await post(livegateUrl, pool[i] as LoadRequest)
    const cursor = answer.json?.data?.recordings?.pageInfo?.endCursor
    const shown = JSON.stringify(answer.json).slice(0, 400)
    if (typeof cursor !== 'string') throw new Error(`a recordings page came without a cursor: ${shown}`)
    pool.push(body({ userName: user, ...code, first: 50, after: cursor }))
  }
  return pool
}

/** Where two JSON values first differ: the path, then each side's value there. */
function firstDifference(ours: unknown, theirs: unknown, path = ''): string {
  if (ours && theirs && typeof ours === 'object' && typeof theirs === 'object') {
    for (const key of new Set([...Object.keys(ours), ...Object.keys(theirs)])) {
      const [a, b] = [(ours as Record<string, unknown>)[key], (theirs as Record<string, unknown>)[key]]
      if (!isDeepStrictEqual(a, b)) return firstDifference(a, b, `${path}.${key}`)
    }
  }
  return `${path || '(top)'}: ${JSON.stringify(ours)?.slice(0, 300)} ≠ ${JSON.stringify(theirs)?.slice(0, 300)}`
}

/**
 * livegate and the ceiling must give the same answer to every request of the pool before either
 * is measured, each a full page of 50, twice over (the second once both have warmed up).
 */
export async function checkSameAnswers(livegateUrl: string, ceilingUrl: string, pool: LoadRequest[]): Promise<void> {
  for (const request of [...pool, ...pool]) {
    const [ours, theirs] = await Promise.all([post(livegateUrl, request), post(ceilingUrl, request)])
    const shown = JSON.stringify(ours.json).slice(0, 400)
    if (ours.status !== 200 || ours.json.errors) throw new Error(`livegate answered ${ours.status}: ${shown}`)
    const count = ours.json.data.recordings.edges.length
    if (count !== 50) throw new Error(`livegate answered ${count} recordings, not 50`)
    if (isDeepStrictEqual(ours.json, theirs.json)) continue
    throw new Error(`livegate and the ceiling answer differently, first at ${firstDifference(ours.json, theirs.json)}`)
  }
}

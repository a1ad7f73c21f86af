import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import type { ExpiryCloses, ExpiryPlan, ExpiryStatus } from './auth.client.js'
import { AUTH_BENCH_ISSUER, AUTH_BENCH_KEY, type AuthServerArgs } from './auth.server.js'
import { type BenchContext, type BenchSection, ms, quantile, ratio } from './bench.report.js'
import { type BenchChild, startChild } from './fanout.process.js'
import { type LoadRequest, runLoad } from './load.generate.js'
import { SMALL_QUERY } from './query.bench.js'

/**
 * Issue 42's targets: the small query with a token against the same with an API key, in
 * alternating windows of one run on one server; then 10k graphql-ws subscribers opened with tokens
 * that expire about a minute later, each close set beside its token's `exp`, and the server's
 * resident set. AUTH_BENCH_SUBSCRIBERS, AUTH_BENCH_EXPIRES_S, AUTH_BENCH_WINDOWS and
 * AUTH_BENCH_WINDOW_MS make a shorter run (its figures then say so).
 */
const setting = (name: string, fallback: number) => Number(process.env[name] ?? fallback)
const SUBSCRIBERS = setting('AUTH_BENCH_SUBSCRIBERS', 10_000)
const EXPIRES_S = setting('AUTH_BENCH_EXPIRES_S', 60)
const WINDOWS = setting('AUTH_BENCH_WINDOWS', 6)
const WINDOW_MS = setting('AUTH_BENCH_WINDOW_MS', 3000)
const PER_CLIENT = 5_000
/** Distinct tokens over the sockets, their expiries spread over {@link SPREAD_S} seconds. */
const TOKENS = 100
const SPREAD_S = 10
const TASKS = 200
const LATE_MS = 2000
const RSS_LIMIT = 2 ** 30
const SUBSCRIPTION = 'subscription { taskChanged { taskId } }'

type Sign = (subject: string, exp: number) => Promise<string>

async function provider(): Promise<{ jwk: Record<string, unknown>; sign: Sign }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }
  const sign: Sign = (subject, exp) =>
    new SignJWT({ livegate: { serviceCodes: ['*'] } })
      .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'JWT' })
      .setSubject(subject)
      .setIssuer(AUTH_BENCH_ISSUER)
      .setAudience('livegate')
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(privateKey)
  return { jwk, sign }
}

function smallQuery(authorization: string): LoadRequest {
  const body = Buffer.from(JSON.stringify({ operationName: 'TaskList', query: SMALL_QUERY, variables: { first: 20 } }))
  const headers = { 'content-type': 'application/json', 'content-length': String(body.length), authorization }
  return { path: '/graphql', headers, body }
}

interface Window {
  rps: number
  p50Ms: number
  failed: number
}

/** Key and token windows alternate (which goes first too), so a drift of a busy machine falls on both. */
async function tokenAgainstKey(url: string, sign: Sign, log: BenchContext['log']) {
  const token = await sign('bench-user', Math.floor(Date.now() / 1000) + 3600)
  const pools = { key: [smallQuery(`Bearer ${AUTH_BENCH_KEY}`)], token: [smallQuery(`Bearer ${token}`)] }
  const window = async (pool: LoadRequest[], durationMs: number): Promise<Window> => {
    const result = await runLoad({ url, connections: 16, warmupMs: 300, durationMs, pool, repeat: true })
    return { rps: result.rps, p50Ms: result.p50Ms, failed: result.failedTotal + result.errorsTotal }
  }
  for (const pool of Object.values(pools)) await window(pool, 1500)
  const figures = { key: [] as Window[], token: [] as Window[] }
  for (let i = 0; i < WINDOWS; i++) {
    const order = i % 2 === 0 ? (['key', 'token'] as const) : (['token', 'key'] as const)
    for (const method of order) {
      const figure = await window(pools[method], WINDOW_MS)
      figures[method].push(figure)
      log(`auth: window ${i + 1} (${method}): ${figure.rps.toFixed(0)} req/s, p50 ${ms(figure.p50Ms)} ms`)
    }
  }
  const median = (values: number[]) =>
    quantile(
      [...values].sort((a, b) => a - b),
      0.5,
    )
  const pairs = figures.token.map((figure, i) => figure.rps / (figures.key[i] as Window).rps)
  return {
    key: { rps: median(figures.key.map((f) => f.rps)), p50Ms: median(figures.key.map((f) => f.p50Ms)) },
    token: { rps: median(figures.token.map((f) => f.rps)), p50Ms: median(figures.token.map((f) => f.p50Ms)) },
    ratio: median(pairs),
    failed: [...figures.key, ...figures.token].reduce((sum, f) => sum + f.failed, 0),
  }
}

/** Sockets opened with tokens expiring EXPIRES_S to EXPIRES_S + SPREAD_S seconds after signing. */
async function expiringSockets(url: string, sign: Sign, server: BenchChild, log: BenchContext['log']) {
  const first = Math.floor(Date.now() / 1000) + EXPIRES_S
  const exps = Array.from({ length: TOKENS }, (_, i) => first + Math.floor((i * SPREAD_S) / TOKENS))
  const tokens = await Promise.all(exps.map((exp, i) => sign(`bench-user-${i}`, exp)))
  const clients = Array.from({ length: Math.ceil(SUBSCRIBERS / PER_CLIENT) }, () => startChild('./auth.client.ts'))
  try {
    const began = Date.now()
    const plans = clients.map((_, c): ExpiryPlan => {
      const sockets = Math.min(PER_CLIENT, SUBSCRIBERS - c * PER_CLIENT)
      return { url, sockets, tokens, query: SUBSCRIPTION }
    })
    const opened = await Promise.all(clients.map((client, c) => client.ask<ExpiryStatus>('open', plans[c])))
    const openSeconds = (Date.now() - began) / 1000
    const acknowledged = opened.reduce((sum, s) => sum + s.acknowledged, 0)
    const rssOpen = await server.ask<{ peak: number; current: number }>('rss')
    log(`auth: ${acknowledged} of ${SUBSCRIBERS} sockets acknowledged in ${openSeconds.toFixed(1)} s`)
    const deadline = ((exps.at(-1) as number) + 1) * 1000 + 15_000
    for (;;) {
      const statuses = await Promise.all(clients.map((client) => client.ask<ExpiryStatus>('status')))
      if (statuses.reduce((sum, s) => sum + s.closed, 0) >= SUBSCRIBERS || Date.now() > deadline) break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    const rss = await server.ask<{ peak: number; current: number }>('rss')
    const late: number[] = []
    let open = 0
    let otherCodes = 0
    let early = 0
    for (const closes of await Promise.all(clients.map((client) => client.ask<ExpiryCloses>('closes')))) {
      closes.codes.forEach((code, s) => {
        if (closes.acknowledged[s] !== 1) return
        if (code === 0) return void open++
        if (code !== 4401) return void otherCodes++
        const lateness = (closes.closedAt[s] as number) - (exps[closes.token[s] as number] as number) * 1000
        // A timer may fire a little before the wall clock's millisecond; more than that would close too soon.
        if (lateness < -100) early++
        late.push(lateness)
      })
    }
    late.sort((a, b) => a - b)
    return { acknowledged, openSeconds, late, open, otherCodes, early, rssOpen, rss }
  } finally {
    await Promise.all(clients.map((client) => client.stop()))
  }
}

export async function runAuthBench(ctx: BenchContext): Promise<BenchSection> {
  const database = await ctx.createDatabase()
  const server = startChild('./auth.server.ts')
  try {
    const { jwk, sign } = await provider()
    const args: AuthServerArgs = { databaseUrl: database.url, jwk, tasks: TASKS }
    const { url } = await server.ask<{ url: string }>('start', args)
    const query = await tokenAgainstKey(url, sign, ctx.log)
    const sockets = await expiringSockets(url, sign, server, ctx.log)
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`
    const worst = sockets.late.at(-1) ?? Number.NaN
    const allClosed = sockets.open === 0 && sockets.otherCodes === 0 && sockets.acknowledged === SUBSCRIBERS
    return {
      title: 'Auth (issue 42)',
      description:
        `The small query (\`tasks(first: 20)\`, ${TASKS} seeded tasks, 16 connections) sent with a token and with an ` +
        `API key to one server, in ${WINDOWS} alternating pairs of ${WINDOW_MS / 1000} s windows; the token is one ` +
        'RS256 token, so after its first request it is served from the cache of verified tokens (by its hash). Then ' +
        `${SUBSCRIBERS} graphql-ws subscribers (\`taskChanged\`), opened with ${TOKENS} RS256 tokens expiring ` +
        `${EXPIRES_S}–${EXPIRES_S + SPREAD_S} s after they were signed; each close is set beside its token's \`exp\`.`,
      columns: ['figure', 'value'],
      rows: [
        ['small query with a key (median req/s, p50)', `${query.key.rps.toFixed(0)}, ${ms(query.key.p50Ms)} ms`],
        ['small query with a token (median req/s, p50)', `${query.token.rps.toFixed(0)}, ${ms(query.token.p50Ms)} ms`],
        ['failed answers', String(query.failed)],
        [
          'sockets acknowledged, and how long opening took',
          `${sockets.acknowledged}, ${sockets.openSeconds.toFixed(1)} s`,
        ],
        ['sockets not closed / closed with another code', `${sockets.open} / ${sockets.otherCodes}`],
        [
          'close after exp (p50 / p99 / max)',
          `${ms(quantile(sockets.late, 0.5))} / ${ms(quantile(sockets.late, 0.99))} / ${ms(worst)} ms`,
        ],
        ['closed before exp', String(sockets.early)],
        ['server RSS with the sockets open / peak', `${mib(sockets.rssOpen.current)} / ${mib(sockets.rss.peak)}`],
      ],
      targets: [
        {
          name: 'small query, token ÷ key (median of the pairs)',
          target: '≥ 0.95×',
          measured: ratio(query.ratio, 1),
          met: query.ratio >= 0.95 && query.failed === 0,
        },
        {
          name: `${SUBSCRIBERS} token sockets closed 4401 within 2 s of exp`,
          target: `≤ ${LATE_MS} ms`,
          measured: `${ms(worst)} ms`,
          met: allClosed && worst <= LATE_MS && sockets.early === 0,
        },
        {
          name: `server RSS with ${SUBSCRIBERS} token sockets (peak)`,
          target: '≤ 1 GiB',
          measured: mib(sockets.rss.peak),
          met: sockets.rss.peak <= RSS_LIMIT,
        },
      ],
      data: { query, sockets: { ...sockets, late: undefined }, subscribers: SUBSCRIBERS, expiresInS: EXPIRES_S },
    }
  } finally {
    await server.stop()
    await database.drop()
  }
}

import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** A file a page may load, and the type it is served as. */
export interface PageAsset {
  file: string
  type: string
}

export const JS = 'text/javascript; charset=utf-8'
export const CSS = 'text/css; charset=utf-8'

const require = createRequire(import.meta.url)

/** A file inside an installed package: where its prebuilt browser builds are. */
export const packageFile = (name: string, file: string) => join(dirname(require.resolve(`${name}/package.json`)), file)

interface LoadedAsset {
  body: Buffer
  etag: string
}

// Read on first request, once per process: the files only change with an install, which restarts.
const loaded = new Map<string, Promise<LoadedAsset>>()
const loadAsset = (file: string) => {
  let asset = loaded.get(file)
  if (!asset) {
    asset = readFile(file).then((body) => ({
      body,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    }))
    asset.catch(() => loaded.delete(file))
    loaded.set(file, asset)
  }
  return asset
}

/**
 * The route handler of a page's files: a name is looked up in `assets` and nowhere else, so no
 * request can name a path of its own; anything else is the server's 404.
 */
export function assetSender(assets: ReadonlyMap<string, PageAsset>) {
  return async (request: FastifyRequest<{ Params: { file: string } }>, reply: FastifyReply) => {
    const asset = assets.get(request.params.file)
    if (!asset) return reply.callNotFound()
    const { body, etag } = await loadAsset(asset.file)
    reply.header('etag', etag).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff')
    if (request.headers['if-none-match'] === etag) return reply.code(304).send()
    return reply.type(asset.type).send(body)
  }
}

// A host header that could not break out of the policy; anything else gets 'self' alone.
const PLAIN_HOST = /^[a-z0-9.-]+(?::\d{1,5})?$|^\[[0-9a-f:.]+\](?::\d{1,5})?$/i

/**
 * The content security policy of a page livegate serves: scripts, styles, fetches and sockets to
 * this origin only (fetches also to `connectOrigins`), never an inline script. `inlineStyles` is for a library that injects
 * `<style>` elements whose text varies at run time (so no hash can name them).
 */
export function pagePolicy(
  host: string | undefined,
  options: { inlineStyles: boolean; connectOrigins?: readonly string[] },
): string {
  const sockets = host && PLAIN_HOST.test(host) ? ` ws://${host} wss://${host}` : ''
  // Origins the page's scripts may fetch from besides this one (the sign-in provider's).
  const others = (options.connectOrigins ?? []).map((origin) => ` ${origin}`).join('')
  return [
    "default-src 'none'",
    "script-src 'self'",
    options.inlineStyles ? "style-src 'self' 'unsafe-inline'" : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self'${sockets}${others}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/** The headers every page livegate serves carries besides its policy. */
export function pageHeaders(reply: FastifyReply, policy: string): FastifyReply {
  return reply
    .header('content-security-policy', policy)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
}

import { parseArgs } from 'node:util'
import { signCallback } from '../../model/callback.sign.js'
import type { Command } from './command.model.js'

/**
 * `livegate sign [--service CODE] [--url URL] [--get] name=value …`: prints a ready curl line
 * that sends a correctly signed callback, signed with the service's first secret.
 */
export const signCommand: Command = async (args, config, io) => {
  const { values, positionals } = parseArgs({
    args,
    options: { service: { type: 'string' }, url: { type: 'string' }, get: { type: 'boolean' } },
    allowPositionals: true,
  })
  const service = values.service ? config.services.find((s) => s.serviceCode === values.service) : config.services[0]
  if (!service) {
    io.err(
      values.service
        ? `livegate sign: service ${values.service} is not in the configuration`
        : 'livegate sign: no service is configured',
    )
    return 1
  }
  const secret = service.secrets[0]
  if (!secret) {
    io.err(`livegate sign: service ${service.serviceCode} has no secret`)
    return 1
  }
  const fields: Record<string, string> = Object.create(null)
  for (const pair of positionals) {
    const mark = pair.indexOf('=')
    if (mark <= 0) {
      io.err(`livegate sign: "${pair}" is not name=value`)
      return 2
    }
    fields[pair.slice(0, mark)] = pair.slice(mark + 1)
  }
  fields.service_code ??= service.serviceCode
  if (!fields.type) {
    io.err('livegate sign: give the notification type, e.g. type=0')
    return 2
  }
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const request = signCallback(fields, {
    url: values.url ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.port}/callbacks`,
    method: values.get ? 'GET' : 'POST',
    secret,
    headerPrefix: config.ingest.signatureHeaderPrefixes[0] as string,
    nowMs: Date.now(),
  })
  const parts = ['curl', '-sS', '-X', request.method, quote(request.url)]
  for (const [name, value] of Object.entries(request.headers)) parts.push('-H', quote(`${name}: ${value}`))
  if (request.body !== undefined) parts.push('--data-raw', quote(request.body))
  io.out(parts.join(' '))
  return 0
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

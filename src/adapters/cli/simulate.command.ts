import { parseArgs } from 'node:util'
import { type SimulatorStats, startSimulator } from '../../simulator/simulator.run.js'
import type { Command } from './command.model.js'

const USAGE =
  'usage: livegate simulate [--gateway http://127.0.0.1:4000] [--port 4100] [--host 127.0.0.1] [--seed 1] ' +
  '[--sessions 5] [--rate 5] [--loop] [--archive-mishaps]'

/**
 * `livegate simulate`: plays the live-streaming cloud for the configured service codes that have
 * a secret. It serves their task_list, prints its base URL, and with `--gateway` sends the
 * scenario's signed callbacks there. It runs until SIGINT/SIGTERM, or without `--loop` until the
 * scenario is over; it exits 1 when a callback was not answered 200.
 */
export const simulateCommand: Command = async (args, config, io) => {
  let values: ReturnType<typeof parse>['values']
  try {
    values = parse(args).values
  } catch (error) {
    io.err(`livegate simulate: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`)
    return 2
  }
  const numbers = {
    port: whole(values.port, 4100, 0, 65_535),
    seed: whole(values.seed, 1, -2_147_483_648, 2_147_483_647),
    sessions: whole(values.sessions, 5, 0, 100_000),
    rate: positive(values.rate, 5),
  }
  const bad = Object.entries(numbers).find(([, value]) => value === undefined)
  if (bad) {
    io.err(
      `livegate simulate: --${bad[0]} "${String(values[bad[0] as keyof typeof values])}" ` +
        `is not a usable number\n${USAGE}`,
    )
    return 2
  }
  const { port, seed, sessions, rate } = numbers as Record<keyof typeof numbers, number>
  const services = config.services.flatMap((service) =>
    service.secrets[0] ? [{ serviceCode: service.serviceCode, secret: service.secrets[0] }] : [],
  )
  if (services.length === 0) {
    io.err('livegate simulate: no configured service has a secret to sign with (see README, Configuration)')
    return 1
  }
  if (values.gateway !== undefined && !URL.canParse(values.gateway)) {
    io.err(`livegate simulate: --gateway "${values.gateway}" is not a URL`)
    return 2
  }

  const simulator = await startSimulator({
    port,
    host: values.host ?? '127.0.0.1',
    services,
    seed,
    sessions,
    rate,
    loop: values.loop ?? false,
    archiveMishaps: values['archive-mishaps'] ?? false,
    headerPrefix: config.ingest.signatureHeaderPrefixes[0] ?? 'svc',
    ...(values.gateway !== undefined ? { gatewayUrl: values.gateway } : {}),
  })
  const codes = services.map((service) => service.serviceCode).join(', ')
  io.out(`livegate simulate: task_list at ${simulator.url}/api/20140928/task_list for ${codes}`)
  io.out(`livegate simulate: give the gateway "baseUrl": "${simulator.url}" for these service codes`)
  io.out(
    `livegate simulate: cancel_task and send_txt_msg served beside it; what arrived at ${simulator.url}` +
      `/simulator/actions`,
  )
  io.out(
    `livegate simulate: the archive's list_files at ${simulator.url}/api/20140928/management` +
      (values['archive-mishaps'] ? ' (with mishaps)' : ''),
  )
  io.out(
    values.gateway
      ? `livegate simulate: ${sessions} sessions (seed ${seed}) at ${rate} callbacks/s ` +
          `to ${values.gateway.replace(/\/+$/, '')}/callbacks${values.loop ? ', looping' : ''}`
      : `livegate simulate: ${sessions} sessions (seed ${seed}); no --gateway, so no callbacks are sent`,
  )

  const ended = await Promise.race([
    io.stopSignal.then((signal) => `stopped by ${signal}`),
    simulator.done.then(() => 'scenario over'),
  ])
  const stats = await simulator.stop()
  io.out(`livegate simulate: ${ended}; ${summary(stats)}`)
  if (stats.lastFailure) {
    const failure = stats.lastFailure
    io.err(
      `livegate simulate: last refused callback: type ${failure.type} of ${failure.taskId}: ` +
        `${failure.status} ${failure.detail}`,
    )
  }
  return stats.callbacksSent > (stats.answers['200'] ?? 0) ? 1 : 0
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      gateway: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      seed: { type: 'string' },
      sessions: { type: 'string' },
      rate: { type: 'string' },
      loop: { type: 'boolean' },
      'archive-mishaps': { type: 'boolean' },
    },
    allowPositionals: false,
  })
}

function summary(stats: SimulatorStats): string {
  const answers = Object.entries(stats.answers)
    .map(([status, count]) => `${count}× ${status}`)
    .join(', ')
  const sent = `${stats.callbacksSent} callbacks sent${answers ? ` (${answers})` : ''}`
  return `${stats.rounds} round(s), ${sent}, ${stats.taskListRequests} task_list requests`
}

function whole(text: string | undefined, fallback: number, min: number, max: number): number | undefined {
  if (text === undefined) return fallback
  if (!/^-?\d+$/.test(text)) return undefined
  const value = Number(text)
  return value >= min && value <= max ? value : undefined
}

function positive(text: string | undefined, fallback: number): number | undefined {
  if (text === undefined) return fallback
  const value = Number(text)
  return /^\d+(\.\d+)?$/.test(text) && value > 0 ? value : undefined
}

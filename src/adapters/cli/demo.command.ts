import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { type Config, MEMORY_DATA_DIR, StartupError } from '../../config/index.js'
import { DEMO_DAY } from '../../simulator/scenario.model.js'
import { startSimulator } from '../../simulator/simulator.run.js'
import { startDemoReceiver } from './demo.receiver.js'
import type { Command } from './command.model.js'

const DEMO_SERVICE = 'DEMO'
const SAMPLE_QUERY =
  '{ tasks(first: 5) { totalCount edges { node { id userName status endReason outputs { tag format { container } ' +
  'playUrl streams { kind bitRate } } } } } }'

const ARCHIVE_QUERY = '{ recordings(first: 10) { edges { node { fileName seenIn views task { taskId } } } } }'

/**
 * The demo's alert rules, unless the file has its own: those a team keeps, which open an incident
 * someone should look at (a round of the day opens about four: its stalls and a forgotten callback),
 * not one for every task whose audience is still ramping up. docs/getting-started.md lists them.
 */
export const DEMO_RULES: Config['alerts']['rules'] = [
  // An input that delivered nothing for 20 s: the viewers see a frozen picture.
  { name: 'starving', when: 'task.health', is: ['STARVING'], for: 20_000, severity: 'CRITICAL', serviceCodes: '*' },
  // The cloud's task list unanswered for a minute: what livegate shows is getting old.
  { name: 'stale-list', when: 'upstream.stale', for: 60_000, severity: 'CRITICAL', serviceCodes: '*' },
  // A start or end callback the cloud never sent, found by the list.
  {
    name: 'forgetful-cloud',
    when: 'service.callbacksMissing',
    above: 0,
    for: 0,
    severity: 'WARNING',
    serviceCodes: '*',
  },
]

const USAGE =
  'usage: livegate demo [--port 4000] [--simulator-port 4100] [--profile day|burst] [--sessions 24] [--rate 4]'

/**
 * `livegate demo`: the gateway on an in-memory database, fed by the simulator playing the cloud
 * for one service code with a throwaway secret, looping until stopped. For a first look; nothing
 * is kept. The `day` profile (the default) paces it like a service's day: tasks that live minutes,
 * three of them for the whole round (9 to 13 minutes), audiences that ramp and fall, now and
 * then a stall, a reconnect, a forgotten callback. `burst` is the tests' pace: `--sessions`
 * tasks of a few seconds each, `--rate` callbacks a second.
 */
export const demoCommand: Command = async (args, config, io, context) => {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      'simulator-port': { type: 'string' },
      rate: { type: 'string' },
      sessions: { type: 'string' },
      profile: { type: 'string' },
    },
  })
  const profile = values.profile ?? 'day'
  const day = profile === 'day'
  const port = Number(values.port ?? config.port)
  const simulatorPort = Number(values['simulator-port'] ?? 4100)
  const rate = Number(values.rate ?? 4)
  const sessions = Number(values.sessions ?? (day ? 24 : 8))
  if (
    ![port, simulatorPort, rate, sessions].every((n) => Number.isFinite(n) && n >= 0) ||
    !(day || profile === 'burst')
  ) {
    io.err(USAGE)
    return 2
  }
  const secret = randomBytes(16).toString('hex')
  // Every event goes to a small receiver of the demo's own, which verifies each signature.
  const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`
  const receiver = await startDemoReceiver(webhookSecret)
  const demoConfig: Config = {
    ...config,
    port,
    database: { dataDir: MEMORY_DATA_DIR },
    services: [
      { serviceCode: DEMO_SERVICE, secrets: [secret], verify: 'enforce', baseUrl: `http://127.0.0.1:${simulatorPort}` },
    ],
    // Poll often, so tasks show as listed (with their streams) within seconds.
    upstream: { ...config.upstream, pollIntervalMs: 2000 },
    // The archive asked as often, and a missing recording told a minute after its task ended: the
    // simulator's three archive mishaps (a file listed late, a type 2 forgotten, nothing archived) show in a round.
    archive: { ...config.archive, pollIntervalMs: 5000, graceMs: 60_000 },
    // Every callback the simulator sends would log a line: the demo's own lines would scroll away.
    // Warnings and errors still show; LOG_LEVEL asks for more.
    log: { ...config.log, level: io.env.LOG_LEVEL ? config.log.level : 'warn' },
    webhooks: {
      ...config.webhooks,
      endpoints: [{ name: 'demo', url: receiver.hookUrl, secret: webhookSecret, serviceCodes: '*', events: ['*'] }],
    },
    alerts: config.alerts.rules.length > 0 ? config.alerts : { rules: DEMO_RULES },
  }
  const gateway = await io
    .startGateway(demoConfig, {
      databaseUrlOrigin: context.databaseUrlOrigin,
      command: 'demo',
      ...(io.tty !== undefined ? { tty: io.tty } : {}),
    })
    .catch(async (error: unknown) => {
      await receiver.close()
      throw error
    })
  let simulator: Awaited<ReturnType<typeof startSimulator>>
  try {
    simulator = await startSimulator({
      port: simulatorPort,
      services: [{ serviceCode: DEMO_SERVICE, secret }],
      gatewayUrl: gateway.url,
      seed: 1,
      sessions,
      rate,
      ...(day ? { day: DEMO_DAY } : {}),
      loop: true,
      archiveMishaps: true,
      headerPrefix: demoConfig.ingest.signatureHeaderPrefixes[0] ?? 'svc',
    })
  } catch (error) {
    await gateway.close()
    await receiver.close()
    const busy = (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
    throw new StartupError(
      busy
        ? `the simulator's port ${simulatorPort} is already in use (EADDRINUSE): choose another with --simulator-port`
        : `the simulator cannot start: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  io.out(`livegate demo: the gateway is at ${gateway.url}, on an in-memory database`)
  const pace = day
    ? `a day's pace (tasks live minutes; ${sessions} per round of about ${roundMinutes(simulator)} min)`
    : `${rate} callbacks/s`
  io.out(`livegate demo: the simulator plays service ${DEMO_SERVICE} (task_list at ${simulator.url}), ${pace}, looping`)
  io.out(
    `livegate demo: watch the dashboard at ${gateway.url}/dashboard (audience and health, live; press Stop on a ` +
      `live task to stop it through the simulated cloud)`,
  )
  io.out('livegate demo: its archive (list_files) lists each recording after a delay, forgets some type 2 callbacks')
  io.out(
    `livegate demo: and archives nothing for some tasks: see ${ARCHIVE_QUERY}, recording.ready and recording.missing`,
  )
  io.out(`livegate demo: what the simulated cloud received (stops, messages) is at ${simulator.url}/simulator/actions`)
  io.out(`livegate demo: open the playground at ${gateway.url}/graphql, or try a query (tasks appear within seconds):`)
  io.out(
    `  curl -s ${gateway.url}/graphql -H 'content-type: application/json' ` +
      `-d '${JSON.stringify({ query: SAMPLE_QUERY })}'`,
  )
  io.out('livegate demo: every callback and derived event goes as a signed webhook to a receiver that verifies it;')
  io.out(`livegate demo: see what it got (counts, and the latest payloads) at ${receiver.reportUrl}`)
  io.out('livegate demo: Ctrl-C stops it; nothing is kept')
  const signal = await io.stopSignal
  io.out(`livegate demo: stopping (${signal})`)
  await simulator.stop()
  await gateway.close()
  await receiver.close()
  return 0
}

function roundMinutes(simulator: { scenario(): { durationMs: number } }): number {
  return Math.round(simulator.scenario().durationMs / 60_000)
}

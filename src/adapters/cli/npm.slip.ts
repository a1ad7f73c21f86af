/**
 * Finds the common slip `npm start --config livegate.json`: without `--`, npm takes the option for
 * itself and leaves it in its own environment (`npm_config_config`, the value or `true`), so
 * livegate would start without it. `argv` is the command's own arguments. Returns the line that says how to write it,
 * or undefined.
 */
export function npmSlip(
  env: Record<string, string | undefined>,
  optionNames: readonly string[],
  argv: readonly string[],
): string | undefined {
  // Only under an npm script: elsewhere npm_config_* is no slip of ours.
  const event = env.npm_lifecycle_event
  if (!event) return undefined
  for (const name of optionNames) {
    if (name === 'help') continue
    const value = env[`npm_config_${name.replaceAll('-', '_')}`]
    if (value === undefined || argv.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`))) continue
    // npm 10 keeps the value; npm 11 keeps `true` and passes the value on as an argument.
    const shown = value === 'true' || value === '' ? (argv.find((arg) => !arg.startsWith('-')) ?? '…') : value
    const script = event === 'start' || event === 'test' ? `npm ${event}` : `npm run ${event}`
    return (
      `npm took --${name} for itself, so livegate never saw it: write the options after --, as in: ${script} -- ` +
      `--${name}` +
      ` ${shown}`
    )
  }
  return undefined
}

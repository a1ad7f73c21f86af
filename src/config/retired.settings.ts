import type { Config } from './config.schema.js'

/**
 * Settings livegate no longer uses. A file that still sets one loads (a setting being retired
 * must not stop a gateway at its next restart), and the start says so once, naming what took its
 * place, so the line can be removed.
 */
const RETIRED: ReadonlyArray<{ key: string; isSet: (config: Config) => boolean; instead: string }> = [
  {
    key: 'upstream.cacheMs',
    isSet: (config) => config.upstream.cacheMs !== undefined,
    instead: 'queries never ask the task_list; how fresh its data is follows upstream.pollIntervalMs',
  },
]

/** One line for each retired setting the configuration still sets. */
export function retiredSettingWarnings(config: Config): string[] {
  return RETIRED.filter((setting) => setting.isSet(config)).map(
    (setting) =>
      `${setting.key} is no longer used and is ignored (${setting.instead}): remove it from the configuration`,
  )
}

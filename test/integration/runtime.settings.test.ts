import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { runtimeFlags } from '../../src/adapters/cli/runtime.settings.js'

// Node 24's V8 and Node 20's, as process.versions.v8 gives them.
const V8_13_6 = '13.6.233.17-node.53'
const V8_11_3 = '11.3.244.8-node.38'
const FLAG = '--scavenger-max-new-space-capacity-mb=8'

describe('runtime settings', () => {
  it("gives V8 13.6 and later the scavenger's pre-13.6 capacity", () => {
    expect(runtimeFlags({ v8: V8_13_6, execArgv: [] })).toEqual([FLAG])
    expect(runtimeFlags({ v8: '14.1.1.1', execArgv: ['--enable-source-maps'] })).toEqual([FLAG])
  })

  it('leaves older V8s alone: they do not know the flag, and already scavenge so', () => {
    expect(runtimeFlags({ v8: V8_11_3, execArgv: [] })).toEqual([])
    expect(runtimeFlags({ v8: '13.5.212.10', execArgv: [] })).toEqual([])
    expect(runtimeFlags({ v8: '12.4.254.21-node.33', execArgv: [] })).toEqual([])
  })

  it('leaves a value given on the command line alone, in either spelling', () => {
    expect(runtimeFlags({ v8: V8_13_6, execArgv: ['--scavenger-max-new-space-capacity-mb=32'] })).toEqual([])
    expect(runtimeFlags({ v8: V8_13_6, execArgv: ['--scavenger_max_new_space_capacity_mb=16'] })).toEqual([])
  })

  it('sets the flag in a real process of this Node without a word on stderr', () => {
    const script = [
      "import { applyRuntimeSettings } from './src/adapters/cli/runtime.settings.ts'",
      'const set = applyRuntimeSettings({ v8: process.versions.v8, execArgv: process.execArgv })',
      'console.log(JSON.stringify(set))',
    ].join('\n')
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    })
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toEqual(runtimeFlags({ v8: process.versions.v8, execArgv: [] }))
  })
})

/** The channel on which a sampled answer is announced to every gateway instance. */
export const SAMPLE_CHANNEL = 'livegate_samples'

/** A service code's answer taken at `at` was sampled: its samples are in `task_samples`. */
export interface SampleEvent {
  serviceCode: string
  at: number
}

/** The NOTIFY payload of a sample event (a service code is far below NOTIFY's 8000 bytes). */
export function encodeSampleEvent(event: SampleEvent): string {
  return JSON.stringify({ s: [event.serviceCode, event.at] })
}

/** The sample event in a payload, or undefined for anything else. */
export function decodeSampleEvent(payload: string): SampleEvent | undefined {
  try {
    const { s } = JSON.parse(payload) as { s?: unknown }
    if (Array.isArray(s) && s.length === 2 && typeof s[0] === 'string' && Number.isFinite(s[1])) return { serviceCode: s[0], at: s[1] as number }
  } catch {
    // not ours
  }
  return undefined
}

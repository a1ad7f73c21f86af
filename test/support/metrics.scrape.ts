/** One sample of a Prometheus text exposition: its name, labels and value. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Scrapes `/metrics` over HTTP and parses every sample. */
export async function scrapeMetrics(baseUrl: string): Promise<Sample[]> {
  const response = await fetch(`${baseUrl}/metrics`)
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`)
  return parseMetrics(await response.text())
}

/**
 * The samples of a Prometheus text exposition; comment lines are skipped. Label values are read
 * with their escapes (`\\`, `\"`, `\n`), since label order and escaping are the exporter's choice.
 */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (!match) continue
    const labels: Record<string, string> = {}
    for (const label of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * The sum of the samples named `name` whose labels include `labels` (0 when none): a counter
 * summed over the labels not given.
 */
export function metricValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter(
      (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    )
    .reduce((sum, sample) => sum + sample.value, 0)
}

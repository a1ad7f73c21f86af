/**
 * A small seeded random source (mulberry32): the same seed gives the same numbers on every
 * machine and Node version, which `Math.random` does not promise. It is not for secrets.
 */
export interface SeededRandom {
  /** A number in [0, 1). */
  next(): number
  /** A whole number from `min` to `max`, both included. */
  int(min: number, max: number): number
  /** True with probability `p`. */
  chance(p: number): boolean
  /** One item of a non-empty list. */
  pick<T>(items: readonly T[]): T
  /** A copy of the list in a random order. */
  shuffle<T>(items: readonly T[]): T[]
  /** `length` lowercase hexadecimal characters. */
  hex(length: number): string
}

/** A {@link SeededRandom} from a 32-bit seed; any number is folded into 32 bits. */
export function seededRandom(seed: number): SeededRandom {
  let state = Math.trunc(seed) >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1))
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new RangeError('pick needs at least one item')
      return items[int(0, items.length - 1)] as T
    },
    shuffle<T>(items: readonly T[]): T[] {
      const copy = [...items]
      for (let i = copy.length - 1; i > 0; i--) {
        const j = int(0, i)
        ;[copy[i], copy[j]] = [copy[j] as T, copy[i] as T]
      }
      return copy
    },
    hex(length) {
      let text = ''
      while (text.length < length) text += Math.floor(next() * 16).toString(16)
      return text
    },
  }
}

/** A seed for the n-th round of a looping run, far from the seeds a user would type next. */
export function roundSeed(seed: number, round: number): number {
  return round === 0 ? seed : (Math.trunc(seed) + Math.imul(round, 0x9e3779b9)) | 0
}

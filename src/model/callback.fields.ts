/**
 * Readers for the text values of a notification's form fields. Each returns `undefined` for a
 * value of the wrong form, so the parser can name the field instead of guessing.
 */

/** A picture size from `size` (`480x800`). */
export interface PictureSize {
  width: number
  height: number
}

/** `format` split into its three parts (`flv/libx264/aac`). */
export interface MediaFormat {
  container: string
  videoCodec?: string
  audioCodec?: string
}

const INTEGER = /^-?\d{1,15}$/
const DECIMAL = /^-?\d{1,15}(\.\d{1,9})?$/
const SIZE = /^(\d{1,6})[xX](\d{1,6})$/
// The largest seconds value before it is really a millisecond count (year 5138).
const LARGEST_SECONDS_TIME = 99_999_999_999

export function readText(value: string): string {
  return value
}

export function readInteger(value: string): number | undefined {
  return INTEGER.test(value) ? Number(value) : undefined
}

export function readDecimal(value: string): number | undefined {
  return DECIMAL.test(value) ? Number(value) : undefined
}

export function readFlag(value: string): boolean | undefined {
  return value === '1' ? true : value === '0' ? false : undefined
}

export function readSize(value: string): PictureSize | undefined {
  const match = SIZE.exec(value)
  return match ? { width: Number(match[1]), height: Number(match[2]) } : undefined
}

/** `created_at`: whole seconds since 1970, as a time. */
export function readUnixSeconds(value: string): Date | undefined {
  const seconds = readInteger(value)
  if (seconds === undefined || seconds < 0 || seconds > LARGEST_SECONDS_TIME) return undefined
  return new Date(seconds * 1000)
}

export function readFormat(value: string): MediaFormat | undefined {
  if (value === '') return undefined
  const [container = '', videoCodec, audioCodec] = value.split('/')
  const format: MediaFormat = { container }
  if (videoCodec) format.videoCodec = videoCodec
  if (audioCodec) format.audioCodec = audioCodec
  return format
}

/**
 * `opaque` is the business's own text; the service samples it percent-encoded, so it is decoded
 * once when it is validly encoded and kept as sent otherwise.
 */
export function readOpaque(value: string): string {
  if (!/%[0-9A-Fa-f]{2}/.test(value)) return value
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

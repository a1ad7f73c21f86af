import type { CallbackValues } from './callback.fields.js'

/**
 * The one table of notification kinds. Each published type is one entry: its number, its name,
 * the form fields it cannot do without, what the fold keeps of it, and how it reads as a GraphQL
 * object type. Parse, fold and GraphQL are derived from this table (and a test holds them to it),
 * so a new kind is one entry here plus its rule in fold/task.fold.ts.
 */

/** How a value reads in GraphQL: a scalar, or one of the schema's value types and enums. */
export type ViewType =
  | 'String'
  | 'Int'
  | 'Float'
  | 'Boolean'
  | 'SafeInt'
  | 'DateTime'
  | 'MediaFormat'
  | 'DisconnectReason'
  | 'ResumeStatus'

/** Where a GraphQL field's value comes from: a typed value, a part of `size`, or `created_at`. */
export type ViewSource = keyof CallbackValues | 'createdAt' | 'size.width' | 'size.height'

/** One typed GraphQL field of a kind; every one is nullable (a field may be left out or unreadable). */
export interface ViewField {
  from: ViewSource
  as: ViewType
  description: string
}

/** What the fold may keep of a callback: a typed value, or `created_at` (as Unix ms). */
export type FoldSource = keyof CallbackValues | 'createdAt'

/** One notification kind. */
export interface KindEntry {
  type: number
  /** The GraphQL object type of the kind. */
  graphqlType: string
  /** The object type's description. */
  description: string
  /** The `NotificationKind` enum value's description. */
  summary: string
  /**
   * The fields without which the kind means nothing to the graph. The published field lists are
   * longer; the rest are optional, because refusing a notification for a missing opaque or tag
   * would lose it, and the service's retry behaviour is unknown.
   */
  required: readonly string[]
  /** The values the fold keeps of it, beside its stamp and arrival (see fold/task.fold.ts). */
  folds: readonly FoldSource[]
  /** Its typed GraphQL fields, beside those of every notification. */
  view: Readonly<Record<string, ViewField>>
}

// The values every output notification (types 0, 1, 2) carries about its output format.
const OUTPUT_VIEW = {
  createdAt: {
    from: 'createdAt',
    as: 'DateTime',
    description: 'When the live started, by the service (`created_at`).',
  },
  duration: {
    from: 'duration',
    as: 'Float',
    description: 'Video duration as the service gives it (`duration`; its unit is not published).',
  },
  format: {
    from: 'format',
    as: 'MediaFormat',
    description: 'The output format (`format`), split into container and codecs.',
  },
  isResume: {
    from: 'isResume',
    as: 'Boolean',
    description: 'Whether this is a resumed (continued) live (`is_resume`).',
  },
  tag: { from: 'tag', as: 'String', description: 'The label of the output format (`tag`).' },
  opaque: {
    from: 'opaque',
    as: 'String',
    description: 'The business text passed through the service (`opaque`), percent-decoded once when it was encoded.',
  },
  liveOnly: {
    from: 'liveOnly',
    as: 'Boolean',
    description: 'Whether the stream is live only, never archived (`live_only`).',
  },
} as const satisfies Record<string, ViewField>

const CLIENT_VIEW = {
  clientType: { from: 'ctype', as: 'Int', description: 'Client type (`ctype`); mobile SDK only.' },
  clientVersion: { from: 'cversion', as: 'String', description: 'Client version (`cversion`); mobile SDK only.' },
} as const satisfies Record<string, ViewField>

const SIZE_VIEW = {
  width: { from: 'size.width', as: 'Int', description: 'The first number of `size`.' },
  height: { from: 'size.height', as: 'Int', description: 'The second number of `size`.' },
} as const satisfies Record<string, ViewField>

/** The published notification kinds, by name. */
export const KINDS = {
  LIVE_START: {
    type: 0,
    graphqlType: 'LiveStartNotification',
    required: ['hashed_id'],
    description: 'Type 0: an output format of a live became playable; one per output format.',
    summary: 'Type 0: an output format of a live became playable.',
    folds: ['tag', 'url', 'svodUrl', 'size', 'format', 'isResume', 'liveOnly', 'opaque', 'createdAt'],
    view: {
      ...OUTPUT_VIEW,
      playUrl: {
        from: 'url',
        as: 'String',
        description: 'The live play address (`url`); plays from the newest point.',
      },
      timeShiftUrl: {
        from: 'svodUrl',
        as: 'String',
        description:
          'The time-shift play address (`svod_url`, flv only): plays from the beginning while the live runs.',
      },
      ...SIZE_VIEW,
      path: { from: 'path', as: 'String', description: 'Where the video is saved, relative (`path`).' },
      ...CLIENT_VIEW,
    },
  },
  LIVE_END: {
    type: 1,
    graphqlType: 'LiveEndNotification',
    required: ['hashed_id', 'reach_end'],
    description: 'Type 1: a live ended.',
    summary: 'Type 1: a live ended.',
    folds: ['tag', 'format', 'outputIdx', 'reachEnd', 'httpOutputBytes', 'inputBytes', 'duration', 'liveOnly'],
    view: {
      ...OUTPUT_VIEW,
      reachEnd: {
        from: 'reachEnd',
        as: 'Boolean',
        description:
          'True when the user stopped shooting; false when the server stopped it for an abnormal reason (`reach_end`).',
      },
      outputIndex: {
        from: 'outputIdx',
        as: 'Int',
        description: 'Which output format of the live this is about (`output_idx`).',
      },
      httpOutputBytes: {
        from: 'httpOutputBytes',
        as: 'SafeInt',
        description: 'Bytes sent through live output (`http_output_bytes`); flv only, 0 for other formats.',
      },
      inputBytes: { from: 'inputBytes', as: 'SafeInt', description: 'Bytes of input of this live (`input_bytes`).' },
    },
  },
  ARCHIVED: {
    type: 2,
    graphqlType: 'ArchivedNotification',
    required: ['hashed_id'],
    description: 'Type 2: an archived (on-demand) file is ready.',
    summary: 'Type 2: an archived (on-demand) file is ready.',
    folds: [
      'outputIdx',
      'tag',
      'url',
      'path',
      'fileName',
      'format',
      'size',
      'duration',
      'inputBytes',
      'httpOutputBytes',
      'createdAt',
    ],
    view: {
      ...OUTPUT_VIEW,
      playUrl: { from: 'url', as: 'String', description: 'The on-demand play address (`url`).' },
      fileName: { from: 'fileName', as: 'String', description: 'The on-demand file name (`file_name`).' },
      path: { from: 'path', as: 'String', description: 'Where the file is saved, relative (`path`).' },
      ...SIZE_VIEW,
      outputIndex: {
        from: 'outputIdx',
        as: 'Int',
        description: 'Which output format of the live this is (`output_idx`).',
      },
      httpOutputBytes: {
        from: 'httpOutputBytes',
        as: 'SafeInt',
        description: 'Bytes sent through live output (`http_output_bytes`).',
      },
      inputBytes: { from: 'inputBytes', as: 'SafeInt', description: 'Bytes of input of the live (`input_bytes`).' },
      ...CLIENT_VIEW,
    },
  },
  CLIENT_DISCONNECT: {
    type: 8,
    graphqlType: 'ClientDisconnectNotification',
    required: ['username'],
    description: 'Type 8: a mobile client disconnected (mobile SDK only).',
    summary: 'Type 8: a mobile client disconnected.',
    folds: [],
    view: {
      sessionDuration: {
        from: 'sessionDuration',
        as: 'Float',
        description:
          'Time online on one continuous network connection (`session_duration`; its unit is not published).',
      },
      disconnectReason: {
        from: 'disconnectReason',
        as: 'DisconnectReason',
        description: 'Why it disconnected; null for a code the service does not publish (see disconnectReasonCode).',
      },
      disconnectReasonCode: { from: 'disconnectReason', as: 'Int', description: '`disconnect_reason` as sent.' },
    },
  },
  THUMBNAIL: {
    type: 9,
    graphqlType: 'ThumbnailNotification',
    required: ['hashed_id'],
    description: 'Type 9: a thumbnail picture was taken.',
    summary: 'Type 9: a thumbnail was taken.',
    folds: ['url', 'path', 'fileName', 'width', 'height'],
    view: {
      imageUrl: { from: 'url', as: 'String', description: "The picture's download address (`url`)." },
      width: { from: 'width', as: 'Int', description: 'Picture width in pixels (`width`).' },
      height: { from: 'height', as: 'Int', description: 'Picture height in pixels (`height`).' },
      fileName: { from: 'fileName', as: 'String', description: 'The thumbnail file name (`file_name`).' },
      path: { from: 'path', as: 'String', description: 'Where the picture is saved, relative (`path`).' },
      opaque: OUTPUT_VIEW.opaque,
      liveOnly: OUTPUT_VIEW.liveOnly,
    },
  },
  LIVE_RESUME: {
    type: 15,
    graphqlType: 'LiveResumeNotification',
    required: ['hashed_id', 'status'],
    description: 'Type 15: a live is waiting for its client to reconnect, or has resumed.',
    summary: 'Type 15: a live waits for its client to reconnect, or resumed.',
    folds: ['status'],
    view: {
      status: { from: 'status', as: 'ResumeStatus', description: '`status`: WAITING (0) or RESUMED (1).' },
    },
  },
} as const satisfies Record<string, KindEntry>

/** The name of a published kind. */
export type KnownKind = keyof typeof KINDS

/** The name of a kind, or `UNKNOWN` for a type the service does not publish. */
export type CallbackKind = KnownKind | 'UNKNOWN'

/** The kinds as entries, in the table's order. */
export const KIND_ENTRIES = Object.entries(KINDS) as Array<[KnownKind, KindEntry]>

/** The published kinds by type number (a type the service does not publish is absent). */
export const CALLBACK_KINDS: Readonly<Record<number, KnownKind>> = Object.fromEntries(
  KIND_ENTRIES.map(([kind, entry]) => [entry.type, kind]),
)

/** The kind of a notification type number; a type the service does not publish is `UNKNOWN`. */
export function callbackKind(type: number): CallbackKind {
  return Object.hasOwn(CALLBACK_KINDS, type) ? (CALLBACK_KINDS[type] as KnownKind) : 'UNKNOWN'
}

/** What the fold keeps of a kind, typed from its entry: each value or null, `created_at` in Unix ms. */
export type FoldFacts<K extends KnownKind> = {
  [P in (typeof KINDS)[K]['folds'][number]]:
    | (P extends keyof CallbackValues ? NonNullable<CallbackValues[P]> : number)
    | null
}

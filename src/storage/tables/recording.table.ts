import { sql } from 'drizzle-orm'
import type { MediaFormatNode } from '../../fold/graph.model.js'
import {
  bigint,
  bigserial,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core'

/**
 * The catalogue of recordings: one row per file of a service code, whichever channel told it
 * first (a type 2 callback, or the cloud's `list_files`). A file both channels name is one row,
 * so one id. `from_callback` and `from_list` say where it was seen; the list's values (views,
 * likes, description) follow its latest answer.
 */
export const recordings = pgTable(
  'recordings',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    serviceCode: text('service_code').notNull(),
    fileName: text('file_name').notNull(),
    // The task's hashed_id: from the type 2 callback, or a listed file's name or user and time.
    taskId: text('task_id'),
    userName: text('user_name'),
    url: text('url'),
    description: text('description'),
    location: text('location'),
    duration: doublePrecision('duration'),
    width: integer('width'),
    height: integer('height'),
    views: integer('views'),
    likes: integer('likes'),
    recordedAt: timestamp('recorded_at', { withTimezone: true, mode: 'date' }),
    // What only the type 2 callback says (null for a file only listed).
    outputIndex: integer('output_index'),
    tag: text('tag'),
    path: text('path'),
    format: jsonb('format').$type<MediaFormatNode>(),
    inputBytes: bigint('input_bytes', { mode: 'number' }),
    httpOutputBytes: bigint('http_output_bytes', { mode: 'number' }),
    // The callback's `created_at` (the live start by the cloud's clock), and when it was received.
    liveStartedAt: timestamp('live_started_at', { withTimezone: true, mode: 'date' }),
    receivedAt: timestamp('received_at', { withTimezone: true, mode: 'date' }),
    fromCallback: boolean('from_callback').notNull().default(false),
    fromList: boolean('from_list').notNull().default(false),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true, mode: 'date' }).notNull(),
    // The recording time, else first sight: what "newest first" means.
    sortAt: timestamp('sort_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('recordings_service_code_file_name_unique').on(t.serviceCode, t.fileName),
    index('recordings_service_code_sort_idx').on(t.serviceCode, t.sortAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // Led by the user: a catalogue read by user across codes (a key that reads every code) probes it once.
    index('recordings_user_name_sort_idx').on(t.userName, t.sortAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index('recordings_task_idx').on(t.serviceCode, t.taskId).where(sql`${t.taskId} is not null`),
  ],
)

/** How fresh each service code's archive (`list_files`) is, as its poller last stored it. */
export const archiveStatus = pgTable('archive_status', {
  serviceCode: text('service_code').primaryKey(),
  lastPollAt: timestamp('last_poll_at', { withTimezone: true, mode: 'date' }),
  lastSuccessAt: timestamp('last_success_at', { withTimezone: true, mode: 'date' }),
  lastErrorAt: timestamp('last_error_at', { withTimezone: true, mode: 'date' }),
  lastErrorKind: text('last_error_kind'),
  lastErrorMessage: text('last_error_message'),
  lastRet: integer('last_ret'),
  fileCount: integer('file_count'),
  consecutiveFailures: integer('consecutive_failures').notNull().default(0),
})

/**
 * The tasks told as `recording.missing`: ended with `live_only` 0 and no recording after the
 * grace. The key makes the telling once per task, whichever instance decides it first.
 */
export const recordingMissing = pgTable(
  'recording_missing',
  {
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id').notNull(),
    toldAt: timestamp('told_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.serviceCode, t.taskId] })],
)

/** A recording row as read. */
export type RecordingRow = typeof recordings.$inferSelect
/** An archive status row as read. */
export type ArchiveStatusRow = typeof archiveStatus.$inferSelect

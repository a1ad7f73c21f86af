import { z } from 'zod'

/** The version segment every operation of the service's API sits under. */
export const API_VERSION_PATH = '/api/20140928'
/** The task list operation's path below a service's `baseUrl`. */
export const TASK_LIST_PATH = `${API_VERSION_PATH}/task_list`

// The service documents integers; a numeric string is taken too, since both appear in the wild.
const integer = z.union([
  z.number().int(),
  z
    .string()
    .regex(/^-?\d{1,15}$/)
    .transform(Number),
])
const text = z.union([z.string(), z.number().transform(String)])

const streamSchema = z.looseObject({
  index: integer.optional(),
  codec_type: integer.optional(),
  codec_id: integer.optional(),
  width: integer.optional(),
  height: integer.optional(),
  copy: integer.optional(),
  bit_rate: integer.optional(),
})

const outputSchema = z.looseObject({
  file_name: text.optional(),
  tag: text.optional(),
  audio_codec_name: text.optional(),
  video_codec_name: text.optional(),
  format: text.optional(),
  width: integer.optional(),
  height: integer.optional(),
  relative_dir: text.optional(),
  http_output_bytes: integer.optional(),
  http_connections_num: integer.optional(),
  streams: z.array(streamSchema).default([]),
  live_url: text.optional(),
})

const inputSchema = z.looseObject({
  url: text.optional(),
  service_code: text.optional(),
  user_name: text.optional(),
  device_type: integer.optional(),
  device_version: text.optional(),
})

const taskSchema = z.looseObject({
  id: text,
  serial: integer.optional(),
  sequence: integer.optional(),
  progress: integer.optional(),
  vs_id: text.optional(),
  service_code: text.optional(),
  outputs: z.array(outputSchema).default([]),
  inputs: z.array(inputSchema).default([]),
  http_live_url: text.optional(),
  input_bytes: integer.optional(),
  opaque: text.optional(),
})

const userSchema = z.looseObject({
  // Changes on every call: never an identity.
  id: text.optional(),
  vs_id: text.optional(),
  service_code: text.optional(),
  user_name: text,
  client_version: text.optional(),
  device_type: text.optional(),
})

/**
 * A `task_list` answer. Unknown fields are kept (loose objects); `ret` is checked by the client,
 * the lists default to empty.
 */
export const taskListAnswerSchema = z.looseObject({
  ret: integer,
  user_list: z.array(userSchema).default([]),
  task_list: z.array(taskSchema).default([]),
})

/** A validated `task_list` answer. */
export type TaskListAnswer = z.output<typeof taskListAnswerSchema>
/** One task of a `task_list` answer; its `id` is the callbacks' `hashed_id`. */
export type UpstreamTask = TaskListAnswer['task_list'][number]
/** One output of an upstream task. */
export type UpstreamOutput = UpstreamTask['outputs'][number]
/** One audio or video stream of an upstream output. */
export type UpstreamStream = UpstreamOutput['streams'][number]
/** One input of an upstream task. */
export type UpstreamInput = UpstreamTask['inputs'][number]
/** One user of a `task_list` answer. */
export type UpstreamUser = TaskListAnswer['user_list'][number]

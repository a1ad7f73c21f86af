// What the channels subgraph (channels.subgraph.ts) knows and declares; the composition test reads its SDL.

/** The channels this service knows, each showing one task of the cloud. */
export const CHANNELS = [
  { name: 'Morning news', serviceCode: 'TESTING', taskId: 'federated-task' },
  { name: 'Late show', serviceCode: 'TESTING', taskId: 'task-livegate-never-saw' },
]

export const CHANNELS_SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

  "A channel of the company's own catalogue."
  type Channel {
    "Its name."
    name: String!
    "The live task it shows, as livegate knows it."
    task: Task
  }

  "A task of the cloud, known here only by the cloud's key; livegate resolves the rest."
  type Task @key(fields: "serviceCode taskId") {
    serviceCode: String!
    taskId: String!
    "The channel showing this task, if any."
    channel: Channel
  }

  type Query {
    "Every channel."
    channels: [Channel!]!
  }
`

// Generated from the schema by `npm run schema:emit` (`livegate schema possible-types`): do not edit.

/** Each interface and union of the schema, and the object types that can stand for it. */
export const possibleTypes: Record<string, string[]> = {
  Node: ["Action", "ArchivedNotification", "ClientDisconnectNotification", "Incident", "LiveEndNotification", "LiveResumeNotification", "LiveStartNotification", "Output", "Recording", "Task", "ThumbnailNotification", "UnknownNotification", "User"],
  Notification: ["ArchivedNotification", "ClientDisconnectNotification", "LiveEndNotification", "LiveResumeNotification", "LiveStartNotification", "ThumbnailNotification", "UnknownNotification"],
}

/**
 * The fields that identify each object type in a normalized cache. `null`: the type has no
 * identity of its own, and is kept inside the object that holds it.
 */
export const keyFields: Record<string, string[] | null> = {
  Action: ["id"],
  ActionConnection: null,
  ActionEdge: null,
  ArchivedNotification: ["id"],
  ArchiveStatus: null,
  CallbackReconciliation: null,
  ClientDisconnectNotification: ["id"],
  Disconnect: null,
  Incident: ["id"],
  IncidentConnection: null,
  IncidentEdge: null,
  Input: null,
  LiveEndNotification: ["id"],
  LiveResumeNotification: ["id"],
  LiveStartNotification: ["id"],
  MediaFormat: null,
  MetricPoint: null,
  MissingRecording: null,
  NotificationConnection: null,
  NotificationEdge: null,
  Output: ["id"],
  PageInfo: null,
  Recording: ["id"],
  RecordingConnection: null,
  RecordingEdge: null,
  Resume: null,
  SendMessagePayload: null,
  ServiceMetricPoint: null,
  StopTaskPayload: null,
  Stream: null,
  Task: ["id"],
  TaskConnection: null,
  TaskCounts: null,
  TaskEdge: null,
  TaskHealth: null,
  TaskSample: null,
  Thumbnail: null,
  ThumbnailNotification: ["id"],
  UnknownNotification: ["id"],
  UpstreamError: null,
  UpstreamStatus: null,
  User: ["id"],
  UserConnection: null,
  UserEdge: null,
  Viewer: null,
  WebhookDelivery: null,
  WebhookDeliveryConnection: null,
  WebhookDeliveryEdge: null,
  WebhookEndpoint: null,
}

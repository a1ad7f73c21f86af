export { ConfigError, type ConfigSources, loadConfig, settingOrigin } from './config.load.js'
export {
  type ApiKeyConfig,
  type Config,
  type ConfigFile,
  configFileSchema,
  MEMORY_DATA_DIR,
  type ServiceConfig,
} from './config.schema.js'
export { StartupError } from './startup.error.js'
export { WEBHOOK_EVENT_TYPES, type WebhookEndpointConfig, type WebhookEventType } from './webhook.schema.js'
export {
  ALERT_SIGNALS,
  type AlertRule,
  type AlertSignal,
  alertRules,
  INCIDENT_SEVERITIES,
  type IncidentSeverity,
} from './alerts.schema.js'
export { ASYMMETRIC_ALGORITHMS, type AuthConfig, type JwtConfig } from './auth.schema.js'

export { clientKeyOf } from './client-key.js';
export {
  createSmtpGuard,
  type GuardEvent,
  type SmtpGuard,
  type SmtpGuardOptions,
  smtpReply,
} from './guard.js';
export { DEFAULT_SMTP_LISTENER_LIMITS, type SmtpListenerLimits } from './limits.js';
export { type PerMinute, perMinute } from './per-minute.js';
export { type GuardedListener, serveGuarded } from './serve.js';

import { type Config, ConfigError } from '@tern/config';
import { CORE_SERVICES, type Service } from './services.js';

/** Where `npm run start:api` listens by default: the development address of a sender without the api. */
export const DEV_API_URL = 'http://127.0.0.1:3000';

/**
 * The base URL of the links a process writes (issue 32): tracking pixels and click links (sender),
 * unsubscribe links (sender; campaign fan-out and sequences in the worker). Only the api serves them,
 * so a process must not guess: in production a split-mode process that writes links needs
 * `PUBLIC_URL` (the all-in-one serves every link it writes on its own port). In development the
 * default is this process's own address when it runs the api, else `npm run start:api`'s default
 * address — never the sender's own port, which answers 404 for `/t/o|c/…`.
 */
export function resolvePublicUrl(config: Config, services: ReadonlySet<Service>): string {
  if (config.publicUrl) return config.publicUrl;
  const writers = (['sender', 'api', 'worker'] as const).filter((s) => services.has(s));
  const allInOne = CORE_SERVICES.every((s) => services.has(s));
  if (config.nodeEnv === 'production' && writers.length > 0 && !allInOne) {
    throw new ConfigError(
      `Invalid configuration: PUBLIC_URL must be set in production to run the ${writers.join(' and ')} in split mode: it writes tracking and unsubscribe links, which must reach the api (e.g. PUBLIC_URL=https://mail.example.com)`,
      ['PUBLIC_URL'],
    );
  }
  return services.has('api') ? `http://${config.host}:${config.port}` : DEV_API_URL;
}

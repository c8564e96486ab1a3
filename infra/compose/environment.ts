// The `environment` and `ports` checks of a compose file's services (part of check.ts).
import { ConfigError, ENV_VARS, loadConfig } from '@tern/config';
import { checkTopology, type Service } from '../../services/tern/src/runtime.js';
import { isObject, type JsonObject } from './json.js';

/** Variables a Tern container may carry that Tern itself does not read (node's and libc's own). */
const PROCESS_VARIABLES = new Set(['NODE_OPTIONS', 'TZ', 'UV_THREADPOOL_SIZE']);
/** Container addresses that mean "this container", never another service. */
const SELF_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]', '0.0.0.0']);
const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]']);

// ---------------------------------------------------------------------------------------------
// Environment

export function environmentOf(service: JsonObject): Record<string, string> {
  const env: Record<string, string> = {};
  const raw = service.environment;
  if (Array.isArray(raw)) {
    for (const entry of raw) {
      const [k = '', ...v] = String(entry).split('=');
      // `- KEY` alone takes the host's value; nothing is set here.
      if (v.length > 0) env[k] = v.join('=');
    }
  } else if (isObject(raw)) {
    for (const [k, v] of Object.entries(raw)) if (v !== null) env[k] = String(v);
  }
  return env;
}

/** `host` of a URL or `host:port`, lower case; undefined when there is no value or it cannot be read. */
function hostOf(value: string): string | undefined {
  try {
    return new URL(value).hostname.toLowerCase() || undefined;
  } catch {
    return /^(\[[^\]]+\]|[^:/]+)(?::\d+)?$/.exec(value.trim())?.[1]?.toLowerCase();
  }
}

function dependsOn(service: JsonObject): Set<string> {
  const d = service.depends_on;
  if (Array.isArray(d)) return new Set(d.map(String));
  if (isObject(d)) return new Set(Object.keys(d));
  return new Set();
}

export function environmentProblems(
  env: Record<string, string>,
  roles: Set<Service> | undefined,
  service: JsonObject,
  serviceNames: Set<string>,
  embeddedClickHouse: boolean,
): string[] {
  const problems: string[] = [];
  if (service.env_file !== undefined) {
    problems.push('env_file is not read by this check: give the variables under environment');
  }
  const known = new Set<string>(ENV_VARS);
  for (const key of Object.keys(env)) {
    if (!known.has(key) && !PROCESS_VARIABLES.has(key)) {
      problems.push(
        `${key} is not a variable Tern reads (packages/config): a typo, or a variable to add there`,
      );
    }
  }
  // The check Tern itself makes at start: loadConfig, then the topology of the roles.
  try {
    const config = loadConfig(env);
    if (roles) checkTopology(config, roles);
    if (
      !embeddedClickHouse &&
      !config.clickhouseUrl &&
      (!roles || roles.has('projector') || roles.has('api') || roles.has('worker'))
    ) {
      problems.push(
        'the image is built with EMBEDDED_CLICKHOUSE=false (no chDB): a projector, api or worker needs CLICKHOUSE_URL',
      );
    }
  } catch (error) {
    problems.push(error instanceof ConfigError || error instanceof Error ? error.message : String(error));
  }
  // The stores a role reaches must be services of this file (or outside names with a dot):
  // `localhost` in a container is the container itself.
  const targets: [string, string[]][] = [
    ['DATABASE_URL', env.DATABASE_URL ? [env.DATABASE_URL] : []],
    ['CLICKHOUSE_URL', env.CLICKHOUSE_URL ? [env.CLICKHOUSE_URL] : []],
    ['SMTP_URL', env.SMTP_URL ? [env.SMTP_URL] : []],
    ['KAFKA_BROKERS', (env.KAFKA_BROKERS ?? '').split(',').filter((b) => b.trim() !== '')],
  ];
  const needs = dependsOn(service);
  for (const [variable, values] of targets) {
    for (const value of values) {
      const host = hostOf(value);
      if (!host) continue;
      if (SELF_HOSTS.has(host)) {
        problems.push(`${variable} points at ${host}, which inside a container is the container itself`);
      } else if (!host.includes('.') && !host.includes(':')) {
        if (!serviceNames.has(host))
          problems.push(`${variable} names host "${host}", which is no service of this file`);
        else if (!needs.has(host))
          problems.push(`${variable} names service "${host}" but depends_on does not wait for it`);
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Ports

interface PublishedPort {
  hostIp: string | undefined;
  target: number | undefined;
  text: string;
}

function publishedPorts(service: JsonObject): PublishedPort[] {
  const ports = Array.isArray(service.ports) ? service.ports : [];
  return ports.map((p): PublishedPort => {
    if (isObject(p)) {
      const target = Number(p.target);
      return {
        hostIp: typeof p.host_ip === 'string' ? p.host_ip : undefined,
        target: Number.isFinite(target) ? target : undefined,
        text: JSON.stringify(p),
      };
    }
    // [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTOCOL]; an IPv6 host address is bracketed.
    const text = String(p);
    const m = /^(?:(\[[^\]]+\]|\d{1,3}(?:\.\d{1,3}){3}):)?(?:([\d-]*):)?([\d-]+)(?:\/\w+)?$/.exec(text);
    const target = m ? Number(m[3]) : Number.NaN;
    return { hostIp: m?.[1], target: Number.isFinite(target) ? target : undefined, text };
  });
}

export function portProblems(service: JsonObject, port: number | undefined): string[] {
  const problems: string[] = [];
  if (service.network_mode === 'host') {
    problems.push('network_mode: host publishes every port on every interface of the machine');
  }
  for (const p of publishedPorts(service)) {
    if (!p.hostIp || !LOOPBACK.has(p.hostIp)) {
      problems.push(
        `port "${p.text}" is published on ${p.hostIp ?? 'every interface'}: bind it to 127.0.0.1`,
      );
    }
    if (port !== undefined && p.target !== undefined && p.target !== port) {
      problems.push(
        `port "${p.text}" forwards to container port ${p.target}, but the service listens on PORT ${port}`,
      );
    }
  }
  return problems;
}

// What can be checked of docker-compose.yml without a Docker engine (issue 31): the file against
// the official compose-spec schema, each Tern service's command against the built entry points
// and the documented roles, each service's environment against packages/config, and every
// published port against loopback. `npx tsx infra/compose/check.ts [file]` prints the problems;
// check.unit.test.ts runs it on the real file and on one broken fixture per check.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, posix, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError, ENV_VARS, loadConfig } from '@tern/config';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { checkTopology, SERVICES, type Service } from '../../services/tern/src/runtime.js';
import {
  DOCKERFILE,
  type Dockerfile,
  getStage,
  imageEnvironment,
  parseDockerfile,
} from '../docker/dockerfile.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(here, '../..');
export const COMPOSE_FILE = join(REPO_ROOT, 'docker-compose.yml');
export const COMPOSE_SCHEMA = join(here, 'compose-spec.json');

export type CheckName = 'interpolation' | 'schema' | 'command' | 'environment' | 'ports';

export interface ComposeProblem {
  check: CheckName;
  /** The compose service at fault; undefined for the file as a whole. */
  service?: string;
  message: string;
}

export interface CheckComposeOptions {
  /** The compose file's text. */
  text: string;
  /**
   * The environment `docker compose` would interpolate `${VAR…}` with. Default: empty, i.e. what a
   * machine without any of them set (and no .env file) gets: the file's own defaults.
   */
  hostEnv?: Record<string, string>;
  /** Where the image's files come from (the build context): entry points are looked up here. */
  repoRoot?: string;
  /** The Dockerfile the services' image is built from: its runtime stage's ENV, CMD and COPY lines. */
  dockerfile?: Dockerfile;
  /** The JSON schema (default: the vendored compose-spec.json). */
  schemaFile?: string;
}

/** Variables a Tern container may carry that Tern itself does not read (node's and libc's own). */
const PROCESS_VARIABLES = new Set(['NODE_OPTIONS', 'TZ', 'UV_THREADPOOL_SIZE']);
/** Container addresses that mean "this container", never another service. */
const SELF_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]', '0.0.0.0']);
const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]']);
const WORKDIR = '/app';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------
// Interpolation (compose-spec "Interpolation"): ${VAR}, ${VAR:-default}, ${VAR-default},
// ${VAR:?error}, ${VAR?error}, ${VAR:+replacement}, ${VAR+replacement}, $VAR, and $$ for a `$`.

class InterpolationError extends Error {}

function interpolateString(value: string, env: Record<string, string>): string {
  let out = '';
  let i = 0;
  while (i < value.length) {
    const c = value[i];
    if (c !== '$') {
      out += c;
      i++;
      continue;
    }
    const next = value[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (next === '{') {
      // Find the matching brace: defaults may hold ${…} of their own.
      let depth = 1;
      let j = i + 2;
      while (j < value.length && depth > 0) {
        if (value[j] === '{') depth++;
        else if (value[j] === '}') depth--;
        j++;
      }
      if (depth !== 0) throw new InterpolationError(`unclosed \${ in "${value}"`);
      out += expandBraced(value.slice(i + 2, j - 1), env);
      i = j;
      continue;
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(value.slice(i + 1));
    if (m) {
      out += env[m[0]] ?? '';
      i += 1 + m[0].length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

function expandBraced(body: string, env: Record<string, string>): string {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([\s\S]*))?$/.exec(body);
  if (!m) throw new InterpolationError(`invalid interpolation \${${body}}`);
  const [, name = '', op, arg = ''] = m;
  const value = env[name];
  const set = value !== undefined;
  const nonEmpty = set && value !== '';
  switch (op) {
    case undefined:
      return value ?? '';
    case ':-':
      return nonEmpty ? value : interpolateString(arg, env);
    case '-':
      return set ? value : interpolateString(arg, env);
    case ':?':
    case '?':
      if (op === ':?' ? nonEmpty : set) return value as string;
      throw new InterpolationError(
        `required variable ${name} is missing a value: ${interpolateString(arg, env)}`,
      );
    case ':+':
      return nonEmpty ? interpolateString(arg, env) : '';
    case '+':
      return set ? interpolateString(arg, env) : '';
    default:
      throw new InterpolationError(`invalid interpolation \${${body}}`);
  }
}

function interpolate(
  node: Json,
  env: Record<string, string>,
  problems: ComposeProblem[],
  path: string,
): Json {
  if (typeof node === 'string') {
    try {
      return interpolateString(node, env);
    } catch (error) {
      if (!(error instanceof InterpolationError)) throw error;
      // A merged anchor repeats the same value in every service: name the first place only.
      if (!problems.some((p) => p.check === 'interpolation' && p.message.endsWith(`: ${error.message}`))) {
        problems.push({ check: 'interpolation', message: `${path}: ${error.message}` });
      }
      return node;
    }
  }
  if (Array.isArray(node)) return node.map((v, i) => interpolate(v, env, problems, `${path}[${i}]`));
  if (isObject(node)) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(node))
      out[k] = interpolate(v, env, problems, path ? `${path}.${k}` : k);
    return out;
  }
  return node;
}

// ---------------------------------------------------------------------------------------------
// Schema

let validator: ValidateFunction | undefined;

function schemaValidator(schemaFile: string): ValidateFunction {
  if (validator && schemaFile === COMPOSE_SCHEMA) return validator;
  const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as { $schema?: string };
  // strictTypes/strictTuples would reject the schema's own style (a type implied by sibling
  // keywords); strict mode otherwise stays on, so an unknown keyword in it is an error.
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictTuples: false });
  // The schema names its draft as https://json-schema.org/draft-07/schema; ajv knows the
  // draft-07 meta-schema under its http:// id only.
  if (schema.$schema?.startsWith('https://json-schema.org/draft-07/')) {
    const require = createRequire(import.meta.url);
    const draft7 = require('ajv/dist/refs/json-schema-draft-07.json') as object;
    ajv.addMetaSchema({ ...draft7, $id: schema.$schema });
  }
  const compiled = ajv.compile(schema);
  if (schemaFile === COMPOSE_SCHEMA) validator = compiled;
  return compiled;
}

// ---------------------------------------------------------------------------------------------
// Commands

/** The files the runtime stage puts in the image, as `/app`-relative directory or file paths. */
function imagePaths(df: Dockerfile, stage: string): string[] {
  const paths: string[] = [];
  for (const i of getStage(df, stage).instructions) {
    if (i.keyword !== 'COPY' && i.keyword !== 'ADD') continue;
    const parts = i.rest.split(/\s+/);
    const dest = parts.at(-1);
    if (dest) paths.push(posix.normalize(posix.isAbsolute(dest) ? posix.relative(WORKDIR, dest) : dest));
  }
  return paths;
}

const tsupEntries = new Map<string, Promise<string[]>>();

/** `entry` of a package's tsup config (the bundles `npm run build` writes to its dist/). */
function entriesOf(pkgDir: string): Promise<string[]> {
  let entries = tsupEntries.get(pkgDir);
  if (!entries) {
    const config = join(pkgDir, 'tsup.config.ts');
    entries = existsSync(config)
      ? import(pathToFileURL(config).href).then((m: { default: { entry?: unknown } }) => {
          const entry = m.default.entry;
          if (Array.isArray(entry)) return entry.map(String);
          return isObject(entry as Json) ? Object.values(entry as Record<string, string>) : [];
        })
      : Promise.resolve([]);
    tsupEntries.set(pkgDir, entries);
  }
  return entries;
}

/**
 * Whether `file` (relative to /app) is a bundle the build writes and the image carries: a
 * `<package>/dist/<name>.js` whose tsup config builds `src/<name>.ts`, under a path the runtime
 * stage copies.
 */
async function entryProblem(file: string, root: string, copied: string[]): Promise<string | undefined> {
  const rel = posix.normalize(file.startsWith(`${WORKDIR}/`) ? file.slice(WORKDIR.length + 1) : file);
  if (isAbsolute(rel)) return `${file} is outside ${WORKDIR}, where the image keeps Tern`;
  const m = /^((?:services|packages)\/[^/]+)\/dist\/(.+)\.js$/.exec(rel);
  if (!m) return `${file} is not a built entry point (<package>/dist/<name>.js)`;
  const [, pkg = '', name = ''] = m;
  const source = `src/${name}.ts`;
  if (!existsSync(join(root, pkg, source))) return `${file}: its source ${pkg}/${source} does not exist`;
  const entries = (await entriesOf(join(root, pkg))).map((e) => posix.normalize(e));
  if (!entries.includes(source)) return `${file}: ${pkg}/tsup.config.ts does not build ${source}`;
  if (!copied.some((p) => rel === p || rel.startsWith(`${p}/`))) {
    return `${file}: the runtime stage of the Dockerfile does not copy it into the image`;
  }
  return undefined;
}

/** Compose's `command`: a list, or a string split as a shell would split words (no shell runs it). */
function commandArgv(command: Json | undefined): string[] | undefined {
  if (command === undefined || command === null) return undefined;
  if (Array.isArray(command)) return command.map(String);
  const words = String(command).match(/"[^"]*"|'[^']*'|\S+/g) ?? [];
  return words.map((w) => w.replace(/^(["'])(.*)\1$/, '$2'));
}

async function commandProblems(
  name: string,
  argv: string[],
  root: string,
  copied: string[],
): Promise<{ problems: string[]; roles: Set<Service> | undefined }> {
  const problems: string[] = [];
  const [program, entry, ...args] = argv;
  if (program !== 'node') {
    problems.push(
      `command starts with "${program ?? ''}": node must be PID 1 so that SIGTERM reaches it (no npm or shell in between); use [node, services/tern/dist/main.js, --services=…]`,
    );
    return { problems, roles: undefined };
  }
  if (!entry) {
    problems.push('command runs node without an entry point');
    return { problems, roles: undefined };
  }
  const bad = await entryProblem(entry, root, copied);
  if (bad) problems.push(bad);
  let roles: Set<Service> | undefined = new Set(SERVICES);
  for (const arg of args) {
    const m = /^--services=(.*)$/.exec(arg);
    if (!m) {
      problems.push(`argument "${arg}" is not one main.js reads (only --services=…)`);
      continue;
    }
    const names = (m[1] ?? '').split(',').filter(Boolean);
    const unknown = names.filter((n) => !(SERVICES as readonly string[]).includes(n));
    if (names.length === 0 || unknown.length > 0) {
      problems.push(
        `--services names ${unknown.join(', ') || 'nothing'}: the roles are ${SERVICES.join(', ')}`,
      );
      roles = undefined;
      continue;
    }
    roles = new Set(names as Service[]);
    // The service's name says which role it is (docs/deploy.md); a service named `api` that
    // runs the ingest role would be scaled and routed as the wrong thing.
    const named = new Set(name.split('-'));
    if (named.size !== roles.size || [...roles].some((r) => !named.has(r))) {
      problems.push(
        `service "${name}" runs --services=${names.join(',')}: name the service after its role(s) (${names.join('-')})`,
      );
    }
  }
  return { problems, roles };
}

// ---------------------------------------------------------------------------------------------
// Environment

function environmentOf(service: JsonObject): Record<string, string> {
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

function environmentProblems(
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

function portProblems(service: JsonObject, port: number | undefined): string[] {
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

// ---------------------------------------------------------------------------------------------

/** A Tern service of a compose file, as its container would start. */
export interface TernService {
  name: string;
  service: JsonObject;
  /** The command, else the image's CMD (exec form); undefined when neither gives one. */
  argv: string[] | undefined;
  /** The image's ENV under the service's `environment`. */
  env: Record<string, string>;
  /** The Dockerfile stage it runs. */
  stage: string;
  /** Whether its image carries chDB: not when built with EMBEDDED_CLICKHOUSE=false. */
  embeddedClickHouse: boolean;
}

interface LoadedCompose {
  problems: ComposeProblem[];
  services: JsonObject;
  tern: TernService[];
}

/** A `build.args` value, from the map or the `KEY=value` list form. */
function buildArg(build: Json, name: string): string | undefined {
  const args = isObject(build) ? build.args : undefined;
  if (Array.isArray(args)) {
    const entry = args.map(String).find((a) => a.startsWith(`${name}=`));
    return entry?.slice(name.length + 1);
  }
  return isObject(args) && args[name] !== undefined && args[name] !== null ? String(args[name]) : undefined;
}

function loadCompose(opts: CheckComposeOptions, df: Dockerfile): LoadedCompose {
  const problems: ComposeProblem[] = [];
  let raw: Json;
  try {
    // Compose reads YAML 1.1 merge keys (`<<: *anchor`).
    raw = parse(opts.text, { merge: true }) as Json;
  } catch (error) {
    return {
      problems: [{ check: 'schema', message: `not YAML: ${(error as Error).message}` }],
      services: {},
      tern: [],
    };
  }
  // Compose interpolates first, then validates (compose-go's loader does the same).
  const doc = interpolate(raw, opts.hostEnv ?? {}, problems, '');
  const validate = schemaValidator(opts.schemaFile ?? COMPOSE_SCHEMA);
  if (!validate(doc)) {
    for (const e of validate.errors ?? []) {
      const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
      problems.push({
        check: 'schema',
        message: `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${extra}`,
      });
    }
    return { problems, services: {}, tern: [] };
  }
  if (!isObject(doc) || !isObject(doc.services)) return { problems, services: {}, tern: [] };
  const services = doc.services;
  const lastStage = df.stages.at(-1)?.name ?? '';
  // Tern's services are the ones built from this repository, and those running an image one of
  // them builds.
  const builtImages = new Map(
    Object.values(services)
      .filter((s): s is JsonObject => isObject(s) && s.build !== undefined && typeof s.image === 'string')
      .map((s) => [s.image as string, s.build] as const),
  );
  const tern: TernService[] = [];
  for (const [name, service] of Object.entries(services)) {
    if (!isObject(service)) continue;
    const build =
      service.build ?? (typeof service.image === 'string' ? builtImages.get(service.image) : undefined);
    if (build === undefined) continue;
    const stage = isObject(build) && typeof build.target === 'string' ? build.target : lastStage;
    const cmd = getStage(df, stage).instructions.findLast((i) => i.keyword === 'CMD');
    tern.push({
      name,
      service,
      argv: commandArgv(service.command) ?? cmd?.exec,
      env: { ...imageEnvironment(df, stage), ...environmentOf(service) },
      stage,
      embeddedClickHouse: buildArg(build, 'EMBEDDED_CLICKHOUSE') !== 'false',
    });
  }
  return { problems, services, tern };
}

/** Every problem of a compose file; empty when it passes. */
export async function checkCompose(opts: CheckComposeOptions): Promise<ComposeProblem[]> {
  const root = opts.repoRoot ?? REPO_ROOT;
  const df = opts.dockerfile ?? parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  const { problems, services, tern } = loadCompose(opts, df);
  const serviceNames = new Set(Object.keys(services));
  const ports = new Map<string, number | undefined>();
  for (const t of tern) {
    const add = (check: CheckName, message: string) => problems.push({ check, service: t.name, message });
    if (t.service.entrypoint !== undefined) add('command', 'entrypoint is set: the image runs node itself');
    let roles: Set<Service> | undefined;
    if (!t.argv) add('command', 'no command, and the image has no exec-form CMD');
    else {
      const result = await commandProblems(t.name, t.argv, root, imagePaths(df, t.stage));
      for (const p of result.problems) add('command', p);
      roles = result.roles;
    }
    for (const p of environmentProblems(t.env, roles, t.service, serviceNames, t.embeddedClickHouse))
      add('environment', p);
    const port = Number(t.env.PORT);
    ports.set(t.name, Number.isInteger(port) ? port : undefined);
  }
  for (const [name, service] of Object.entries(services)) {
    if (!isObject(service)) continue;
    for (const p of portProblems(service, ports.get(name)))
      problems.push({ check: 'ports', service: name, message: p });
  }
  return problems;
}

/**
 * The Tern services of a compose file the checks pass, as their containers would start: for
 * tests that run them outside Docker. Throws the problems otherwise.
 */
export async function ternServices(opts: CheckComposeOptions): Promise<TernService[]> {
  const problems = await checkCompose(opts);
  if (problems.length > 0)
    throw new Error(`compose file refused:\n${problems.map((p) => p.message).join('\n')}`);
  const df = opts.dockerfile ?? parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  return loadCompose(opts, df).tern;
}

async function main(): Promise<void> {
  const file = resolve(process.argv[2] ?? COMPOSE_FILE);
  const problems = await checkCompose({ text: readFileSync(file, 'utf8') });
  for (const p of problems)
    process.stdout.write(`${p.check}${p.service ? ` [${p.service}]` : ''}: ${p.message}\n`);
  process.stdout.write(problems.length === 0 ? `${file}: ok\n` : `${file}: ${problems.length} problem(s)\n`);
  process.exit(problems.length === 0 ? 0 : 1);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

// What can be checked of docker-compose.yml without a Docker engine (issue 31): the file against
// the official compose-spec schema, each Tern service's command against the built entry points
// and the documented roles, each service's environment against packages/config, and every
// published port against loopback. `npx tsx infra/compose/check.ts [file]` prints the problems;
// check.unit.test.ts runs it on the real file and on one broken fixture per check.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import type { Service } from '../../services/tern/src/runtime.js';
import {
  DOCKERFILE,
  type Dockerfile,
  getStage,
  imageEnvironment,
  parseDockerfile,
} from '../docker/dockerfile.mjs';
import { commandArgv, commandProblems, imagePaths } from './commands.js';
import { environmentOf, environmentProblems, portProblems } from './environment.js';
import { interpolate } from './interpolate.js';
import { isObject, type Json, type JsonObject } from './json.js';

export type { Json, JsonObject } from './json.js';

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

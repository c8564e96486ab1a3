// Compose interpolation of a parsed compose file (part of check.ts).
import type { ComposeProblem } from './check.js';
import { isObject, type Json, type JsonObject } from './json.js';

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

export function interpolate(
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

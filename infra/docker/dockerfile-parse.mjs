// The Dockerfile reader of dockerfile.mjs (which re-exports parseDockerfile): logical lines,
// flags, exec form and KEY=value pairs, then the stages and their instructions. No dependencies.

/** Instructions whose arguments are kept as raw text; the others are parsed further below. */
const KNOWN = new Set([
  'FROM',
  'ARG',
  'ENV',
  'RUN',
  'COPY',
  'ADD',
  'WORKDIR',
  'USER',
  'EXPOSE',
  'HEALTHCHECK',
  'CMD',
  'ENTRYPOINT',
  'LABEL',
  'STOPSIGNAL',
  'SHELL',
  'VOLUME',
  'ONBUILD',
]);

/**
 * Logical lines: parser directives read, comments dropped, continuations joined (the escape
 * character at a line's end, `\` unless `# escape=` says otherwise). Heredocs are refused: this
 * reader does not follow them and must not pretend to.
 * @param {string} text
 */
function logicalLines(text) {
  const raw = text.split(/\r?\n/);
  let escapeChar = '\\';
  let i = 0;
  // Parser directives: `# key=value` lines before anything else.
  for (; i < raw.length; i++) {
    const m = /^#\s*([a-z]+)\s*=\s*(\S+)\s*$/i.exec(raw[i] ?? '');
    if (!m) break;
    if (m[1]?.toLowerCase() === 'escape') escapeChar = m[2] ?? '\\';
  }
  /** @type {{ text: string; line: number }[]} */
  const lines = [];
  let current = '';
  let start = 0;
  for (; i < raw.length; i++) {
    const line = raw[i] ?? '';
    const trimmed = line.trim();
    // Comment lines are removed, also inside a continued instruction.
    if (trimmed.startsWith('#')) continue;
    if (current === '') {
      if (trimmed === '') continue;
      start = i + 1;
    }
    // A continued line joins the previous one with one space (the shell splits words the same).
    const body = current === '' ? line.trimEnd() : line.trim();
    if (body.endsWith(escapeChar)) {
      current += `${body.slice(0, -escapeChar.length).trimEnd()} `;
      continue;
    }
    current += body;
    lines.push({ text: current.trim(), line: start });
    current = '';
  }
  if (current.trim() !== '') lines.push({ text: current.trim(), line: start });
  return lines;
}

/**
 * Leading `--name=value` flags of an instruction (RUN --mount=…, COPY --from=…).
 * @param {string} args
 */
function splitFlags(args) {
  /** @type {Record<string, string>} */
  const flags = {};
  let rest = args;
  for (;;) {
    const m = /^--([a-z-]+)(?:=(\S*))?\s*/.exec(rest);
    if (!m) break;
    flags[m[1] ?? ''] = m[2] ?? 'true';
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

/**
 * `["a", "b"]` (exec form) → the array; anything else → undefined (shell form).
 * @param {string} text
 */
function execForm(text) {
  if (!text.startsWith('[')) return undefined;
  try {
    const parsed = JSON.parse(text);
    return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `K=V K2="V 2"` (and the legacy `K V`) → pairs. Quotes are removed; `\` escapes the next character.
 * @param {string} text
 * @param {boolean} allowLegacy
 */
function keyValues(text, allowLegacy) {
  /** @type {[string, string | undefined][]} */
  const pairs = [];
  if (allowLegacy && !/^[^\s=]+=/.test(text)) {
    const m = /^(\S+)\s+(.*)$/s.exec(text);
    if (m) return [[m[1] ?? '', m[2] ?? '']];
  }
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i] ?? '')) i++;
    if (i >= text.length) break;
    let key = '';
    while (i < text.length && !/[\s=]/.test(text[i] ?? '')) key += text[i++];
    if (text[i] !== '=') {
      pairs.push([key, undefined]);
      continue;
    }
    i++;
    let value = '';
    let quote = '';
    while (i < text.length) {
      const c = text[i] ?? '';
      if (quote) {
        if (c === quote) quote = '';
        else if (c === '\\' && quote === '"' && i + 1 < text.length) value += text[++i];
        else value += c;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '\\' && i + 1 < text.length) value += text[++i];
      else if (/\s/.test(c)) break;
      else value += c;
      i++;
    }
    pairs.push([key, value]);
  }
  return pairs;
}

/**
 * @param {string} text  the Dockerfile
 * @returns {import('./dockerfile.d.mts').Dockerfile}
 */
export function parseDockerfile(text) {
  /** @type {Record<string, string | undefined>} */
  const globalArgs = {};
  /** @type {import('./dockerfile.d.mts').Stage[]} */
  const stages = [];
  /** @type {import('./dockerfile.d.mts').Stage | undefined} */
  let stage;
  for (const { text: lineText, line } of logicalLines(text)) {
    if (/^RUN\s+<</i.test(lineText) || /^COPY\s+<</i.test(lineText)) {
      throw new Error(`Dockerfile line ${line}: heredocs are not supported by this reader`);
    }
    const m = /^([A-Za-z]+)(?:\s+(.*))?$/s.exec(lineText);
    if (!m) throw new Error(`Dockerfile line ${line}: cannot read "${lineText}"`);
    const keyword = (m[1] ?? '').toUpperCase();
    const args = m[2] ?? '';
    if (!KNOWN.has(keyword)) throw new Error(`Dockerfile line ${line}: unknown instruction ${keyword}`);
    if (keyword === 'FROM') {
      const { flags, rest } = splitFlags(args);
      const from = /^(\S+)(?:\s+AS\s+(\S+))?\s*$/i.exec(rest);
      if (!from) throw new Error(`Dockerfile line ${line}: cannot read FROM "${args}"`);
      stage = {
        name: from[2] ?? String(stages.length),
        from: from[1] ?? '',
        platform: flags.platform,
        line,
        instructions: [],
      };
      stages.push(stage);
      continue;
    }
    if (!stage) {
      if (keyword !== 'ARG') throw new Error(`Dockerfile line ${line}: ${keyword} before the first FROM`);
      for (const [k, v] of keyValues(args, false)) globalArgs[k] = v;
      continue;
    }
    const { flags, rest } = splitFlags(args);
    /** @type {import('./dockerfile.d.mts').Instruction} */
    const instruction = { keyword, args, flags, rest, line };
    if (keyword === 'RUN' || keyword === 'CMD' || keyword === 'ENTRYPOINT') {
      instruction.exec = execForm(rest);
    }
    if (keyword === 'HEALTHCHECK') {
      const hc = /^CMD\s+(.*)$/is.exec(rest);
      if (hc) {
        instruction.command = hc[1] ?? '';
        instruction.exec = execForm(instruction.command);
      }
    }
    if (keyword === 'ENV' || keyword === 'ARG') instruction.pairs = keyValues(rest, keyword === 'ENV');
    stage.instructions.push(instruction);
  }
  return { globalArgs, stages };
}

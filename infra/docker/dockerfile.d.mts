// Types of dockerfile.mjs (plain JavaScript: .ci/run runs it before anything is installed).

export interface Instruction {
  /** Upper case: RUN, COPY, ENV… */
  keyword: string;
  /** Everything after the keyword, continuations joined. */
  args: string;
  /** Leading `--name=value` flags (`--from`, `--mount`…); a bare `--link` is `'true'`. */
  flags: Record<string, string>;
  /** `args` without the flags. */
  rest: string;
  /** 1-based line of the instruction's first line. */
  line: number;
  /** RUN/CMD/ENTRYPOINT/HEALTHCHECK in exec form (`["node", …]`). */
  exec?: string[] | undefined;
  /** HEALTHCHECK: the text after `CMD`. */
  command?: string;
  /** ENV and ARG: name and value (undefined: an ARG without default). */
  pairs?: [string, string | undefined][];
}

export interface Stage {
  /** `AS name`, else its index. */
  name: string;
  /** The image or stage it starts from. */
  from: string;
  platform: string | undefined;
  line: number;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string | undefined>;
  stages: Stage[];
}

export const DOCKERFILE: string;
export function parseDockerfile(text: string): Dockerfile;
export function getStage(df: Dockerfile, name: string): Stage;
export function stageChain(df: Dockerfile, name: string): Stage[];
export function runEnvironment(
  df: Dockerfile,
  name: string,
  buildArgs?: Record<string, string>,
): Record<string, string>;
export function imageEnvironment(df: Dockerfile, name: string): Record<string, string>;
export function runCommands(df: Dockerfile, name: string): string[];
export function installCommands(df: Dockerfile, name: string): string[];
export function pinnedNpmVersion(df: Dockerfile): string | undefined;
export function pathWithNpm(version: string | undefined, say: (message: string) => void): string;
export function runShell(
  commands: readonly string[],
  opts: { cwd: string; env: Record<string, string | undefined>; say: (message: string) => void },
): number;

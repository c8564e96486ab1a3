import { createRequire } from 'node:module';

/**
 * A dependency loaded the first time it is used, not when the process starts (issue 45, item 6).
 * `npm start` bundles every role; a process that never parses mail, never relays it, never talks to
 * Kafka and never serves MCP should not spend its start compiling mailparser, nodemailer, kafkajs or
 * the MCP SDK (about half of the import time of the built process, measured).
 *
 * - An async caller: `onFirstUse(() => import('mailparser'))`, awaited where it is used.
 * - A synchronous caller: `requireOnFirstUse` below.
 *
 * What `load` returns is kept (for `import()`, its promise). A load that throws is thrown to its
 * caller and tried again on the next call.
 */
export function onFirstUse<T>(load: () => T): () => T {
  let loaded: { module: T } | undefined;
  return () => {
    loaded ??= { module: load() };
    return loaded.module;
  };
}

/**
 * `onFirstUse` for a synchronous caller: a `require` of `specifier` resolved from `from` (the
 * caller's `import.meta.url`, so the package resolves from the caller's workspace). A CommonJS
 * package, or a dual package's CommonJS build when nothing keeps state across its instances
 * (nodemailer's transports, libmime's pure functions): an ESM import of it elsewhere is a second
 * instance.
 */
export function requireOnFirstUse<T>(from: string, specifier: string): () => T {
  return onFirstUse(() => createRequire(from)(specifier) as T);
}

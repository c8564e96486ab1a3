import { serveMcpStdio } from '@tern/api';

/**
 * `npm run --silent mcp` (or `node services/tern/dist/mcp.js`): Tern's MCP server over stdio for
 * an agent on this machine (SPEC §28). TERN_API_KEY is the key every tool call presents (its
 * scopes decide what the agent may do); TERN_URL is the Tern whose API it calls (default
 * http://127.0.0.1:$PORT, PORT default 3000). stdout carries the protocol only: messages go to stderr.
 */
const apiKey = process.env.TERN_API_KEY?.trim();
const baseUrl = process.env.TERN_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;

function refuse(message: string): never {
  process.stderr.write(`tern mcp: ${message}\n`);
  process.exit(2);
}

if (!apiKey)
  refuse('set TERN_API_KEY to an API key of your tenant (its scopes decide what the tools may do)');
try {
  if (!['http:', 'https:'].includes(new URL(baseUrl).protocol)) throw new Error('protocol');
} catch {
  refuse(`TERN_URL must be an http(s) URL of Tern's API, got ${JSON.stringify(baseUrl)}`);
}
const { closed } = await serveMcpStdio({ baseUrl, apiKey });
process.stderr.write(`tern mcp: serving over stdio, tools call ${baseUrl}\n`);
await closed;
process.exit(0);

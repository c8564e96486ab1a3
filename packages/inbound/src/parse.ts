import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { onFirstUse } from '@tern/kernel';
import type { Attachment } from 'mailparser';

/** mailparser, loaded with the first message parsed, not with the process (issue 45, item 6). */
export const loadMailparser = onFirstUse(() => import('mailparser'));

/**
 * A received message as the listener read it: the DATA chunks as they came, never concatenated
 * (docs/inbound.md, "Memory of a large message"). Parsing, the verdicts, the body hash and the
 * sealed parts all read the chunks in place, so the message is held once.
 */
export interface RawMessage {
  chunks: readonly Buffer[];
  size: number;
}

/** The first slab of a message (most are small), then slabs of 1 MiB. */
const FIRST_SLAB_BYTES = 64 * 1024;
const SLAB_BYTES = 1024 * 1024;

/**
 * Collects DATA into slabs (64 KiB, then 1 MiB each) instead of keeping the socket's chunks: the
 * chunks are freed as soon as they are copied, so a large message lives in a few large blocks
 * rather than hundreds of 64 KiB ones held for the whole arrival (less heap fragmentation while
 * 20 sessions interleave; docs/inbound.md, "Memory of a large message").
 */
export function createRawCollector() {
  const slabs: Buffer[] = [];
  let used = 0;
  let size = 0;
  return {
    push(chunk: Buffer): void {
      size += chunk.length;
      let at = 0;
      while (at < chunk.length) {
        let slab = slabs[slabs.length - 1];
        if (!slab || used === slab.length) {
          slab = Buffer.allocUnsafeSlow(slabs.length === 0 ? FIRST_SLAB_BYTES : SLAB_BYTES);
          slabs.push(slab);
          used = 0;
        }
        const n = chunk.copy(slab, used, at);
        used += n;
        at += n;
      }
    },
    /** Drops what was collected (a message over the size limit). */
    clear(): void {
      slabs.length = 0;
      used = 0;
    },
    get size(): number {
      return size;
    },
    message(): RawMessage {
      const chunks = slabs.map((s, i) => (i === slabs.length - 1 ? s.subarray(0, used) : s));
      return { chunks, size: chunks.reduce((n, c) => n + c.length, 0) };
    },
  };
}

export function rawMessageOf(raw: Buffer | RawMessage): RawMessage {
  return Buffer.isBuffer(raw) ? { chunks: [raw], size: raw.length } : raw;
}

/** The chunks as a byte stream (mailparser, mailauth): no copy. */
export const rawStream = (raw: RawMessage): Readable => Readable.from(raw.chunks, { objectMode: false });

/** One Buffer of the whole message: a copy of its size, for whoever asks for it (`ReceivedMessage.raw()`). */
export const concatRaw = (raw: RawMessage): Buffer =>
  raw.chunks.length === 1 ? raw.chunks[0]! : Buffer.concat(raw.chunks as Buffer[], raw.size);

/** Offset of the first `needle` across the chunks, or -1 (a match may straddle two chunks). */
function indexAcross(raw: RawMessage, needle: Buffer): number {
  let base = 0;
  let tail = Buffer.alloc(0);
  for (const chunk of raw.chunks) {
    if (tail.length > 0) {
      const joint = Buffer.concat([tail, chunk.subarray(0, needle.length - 1)]);
      const at = joint.indexOf(needle);
      if (at >= 0) return base - tail.length + at;
    }
    const at = chunk.indexOf(needle);
    if (at >= 0) return base + at;
    base += chunk.length;
    // The last bytes of the stream so far (a chunk shorter than the needle keeps older ones).
    const seen = Buffer.concat([tail, chunk.subarray(Math.max(0, chunk.length - (needle.length - 1)))]);
    tail = Buffer.from(seen.subarray(Math.max(0, seen.length - (needle.length - 1))));
  }
  return -1;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const LFLF = Buffer.from('\n\n');

/**
 * SHA-256 of the body's bytes (from the end of the header block): what an MTA's retry leaves
 * unchanged while it may re-stamp traces. The same digest as over one Buffer: the first CRLFCRLF,
 * else the first LFLF, else the whole message.
 */
export function bodyHash(raw: RawMessage): string {
  let at = indexAcross(raw, CRLFCRLF);
  if (at < 0) at = indexAcross(raw, LFLF);
  const hash = createHash('sha256');
  let base = 0;
  for (const chunk of raw.chunks) {
    const end = base + chunk.length;
    if (at < 0 || end > at) hash.update(at < 0 || base >= at ? chunk : chunk.subarray(at - base));
    base = end;
  }
  return hash.digest('hex');
}

/** Attachments larger than this are measured (size, checksum) but their bytes are not kept (DMARC reports stop at 5 MiB). */
export const KEEP_ATTACHMENT_BYTES = 5 * 1024 * 1024;

/** Whether an attachment of `parseForStore` kept its bytes (false: `content` is empty, `size` is the real size). */
export const attachmentKept = (a: Attachment): boolean => a.content.length === a.size;

import type { InboundList, InboundMessage, InboundSummary } from '@tern/contracts/wire';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

// Received mail (SPEC §24): `GET /inbound`, `/inbound/:id`, `/inbound/:id/raw`,
// `/inbound/:id/attachments/:attachmentId` (key scope `inbound:read`).

export interface ListInboundParams {
  /** `meta.nextCursor` of the previous page. */
  cursor?: string;
  /** 1..100, default 20. */
  limit?: number;
  /** Only mail to this address (exact, any case). */
  to?: string;
  /** Only mail from this address (exact, any case). */
  from?: string;
  /** Only mail received at or after this instant. */
  since?: string | Date;
}

export interface InboundApi {
  /** One page of `GET /inbound`, newest first. */
  list(params?: ListInboundParams, options?: RequestOptions): Promise<InboundList>;
  /** Every message matching the filters, newest first, following `nextCursor` page after page. */
  iterate(
    params?: Omit<ListInboundParams, 'cursor'>,
    options?: RequestOptions,
  ): AsyncGenerator<InboundSummary, void, undefined>;
  /** `GET /inbound/:id`: addresses, text, HTML, headers, attachments (metadata), verdicts, thread. */
  get(id: string, options?: RequestOptions): Promise<InboundMessage>;
  /** `GET /inbound/:id/raw`: the MIME message as it arrived, byte for byte. */
  raw(id: string, options?: RequestOptions): Promise<Uint8Array>;
  /** `GET /inbound/:id/attachments/:attachmentId`: one attachment's decoded bytes. */
  attachment(id: string, attachmentId: string, options?: RequestOptions): Promise<Uint8Array>;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isSummary = (v: unknown): v is InboundSummary =>
  isRecord(v) &&
  typeof v.id === 'string' &&
  Array.isArray(v.to) &&
  isRecord(v.auth) &&
  typeof v.receivedAt === 'string' &&
  Array.isArray(v.attachments);
const isInboundList = (v: unknown): v is InboundList =>
  isRecord(v) &&
  Array.isArray(v.data) &&
  v.data.every(isSummary) &&
  isRecord(v.meta) &&
  (typeof v.meta.nextCursor === 'string' || v.meta.nextCursor === null);
const isMessage = (v: unknown): v is InboundMessage =>
  isSummary(v) && Array.isArray((v as unknown as Record<string, unknown>).headers);

export function createInboundApi(send: Send): InboundApi {
  const path = (id: string) => `/inbound/${encodeURIComponent(id)}`;
  const list = (params: ListInboundParams = {}, options: RequestOptions = {}) =>
    send(
      '/inbound',
      {
        cursor: params.cursor,
        limit: params.limit,
        to: params.to,
        from: params.from,
        since: params.since instanceof Date ? params.since.toISOString() : params.since,
      },
      { method: 'GET', read: 'json', check: isInboundList },
      options,
    );
  return {
    list,
    async *iterate(params = {}, options = {}) {
      let cursor: string | undefined;
      do {
        const page = await list({ ...params, ...(cursor ? { cursor } : {}) }, options);
        yield* page.data;
        cursor = page.meta.nextCursor ?? undefined;
      } while (cursor);
    },
    get: (id, options = {}) => send(path(id), {}, { method: 'GET', read: 'json', check: isMessage }, options),
    raw: (id, options = {}) =>
      send<Uint8Array>(`${path(id)}/raw`, {}, { method: 'GET', read: 'bytes' }, options),
    attachment: (id, attachmentId, options = {}) =>
      send<Uint8Array>(
        `${path(id)}/attachments/${encodeURIComponent(attachmentId)}`,
        {},
        { method: 'GET', read: 'bytes' },
        options,
      ),
  };
}

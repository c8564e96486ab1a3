/**
 * The public API, as any client sees it: same paths, same JWT, same error shape (SPEC §4).
 * A 401 ends the session (the app returns to sign-in); other refusals surface their message.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
  /** The route itself is absent from this Tern (an API version without the feature). */
  get routeMissing(): boolean {
    return this.status === 404 && this.code === 'ROUTE_NOT_FOUND';
  }
}

export interface ApiResult<T> {
  body: T;
  /** `X-Tern-As-Of`: when the projection last advanced (absent before the first batch). */
  asOf: string | null;
}

type Listener = () => void;
let onUnauthorized: Listener = () => {};
let token: string | undefined;

export function configureApi(opts: { token: string | undefined; onUnauthorized: Listener }): void {
  token = opts.token;
  onUnauthorized = opts.onUnauthorized;
}

export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  extraHeaders?: Record<string, string>,
): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'Tern cannot be reached. Check that it is running, then retry.');
  }
  const text = await res.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!res.ok) {
    const err = (parsed ?? {}) as { message?: unknown; code?: unknown };
    const message = typeof err.message === 'string' ? err.message : `${res.status} ${res.statusText}`;
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, message, typeof err.code === 'string' ? err.code : undefined);
  }
  return { body: parsed as T, asOf: res.headers.get('x-tern-as-of') };
}

export const get = <T>(path: string) => request<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => request<T>('POST', path, body ?? {});
export const put = <T>(path: string, body: unknown) => request<T>('PUT', path, body);
export const patch = <T>(path: string, body: unknown) => request<T>('PATCH', path, body);
export const del = (path: string) => request<null>('DELETE', path);

/** `?a=1&b=x`, leaving out empty values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** How far an upload is: bytes sent of the body's size. */
export interface UploadProgress {
  loaded: number;
  total: number;
}

/**
 * POST of a file with upload progress (`fetch` reports none): XMLHttpRequest's `upload.onprogress`.
 * Same credential, same error shape and same 401 handling as `request`.
 */
export function upload<T>(
  path: string,
  body: Blob,
  contentType: string,
  onProgress: (p: UploadProgress) => void,
): Promise<ApiResult<T>> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('content-type', contentType);
    if (token) xhr.setRequestHeader('authorization', `Bearer ${token}`);
    xhr.upload.onprogress = (e) =>
      onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : body.size });
    xhr.onerror = () =>
      reject(new ApiError(0, 'Tern cannot be reached. Check that it is running, then retry.'));
    xhr.onload = () => {
      let parsed: unknown = null;
      try {
        parsed = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        parsed = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve({ body: parsed as T, asOf: xhr.getResponseHeader('x-tern-as-of') });
        return;
      }
      const err = (parsed ?? {}) as { message?: unknown; code?: unknown };
      if (xhr.status === 401) onUnauthorized();
      reject(
        new ApiError(
          xhr.status,
          typeof err.message === 'string' ? err.message : `${xhr.status} ${xhr.statusText}`,
          typeof err.code === 'string' ? err.code : undefined,
        ),
      );
    };
    xhr.send(body);
  });
}

/**
 * A file from the API saved by the browser: read with the credential (a plain link could not send
 * it), then handed to the browser's download through an object URL of the bytes.
 */
export async function download(path: string, filename: string): Promise<number> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(path, { headers, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'Tern cannot be reached. Check that it is running, then retry.');
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const err = (await res.json()) as { message?: unknown };
      if (typeof err.message === 'string') message = err.message;
    } catch {
      // Not JSON: keep the status line.
    }
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, message);
  }
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  // The browser has taken the bytes once the click is handled.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return blob.size;
}

/** One Server-Sent Events message: its `id:` (the event's cursor) and its `data:`. */
export interface StreamMessage {
  id: string;
  data: string;
}

/**
 * Reads a `text/event-stream` answer (SPEC §25 `GET /events/stream`) through `fetch`, so that it
 * carries the same Bearer JWT as every other call: `EventSource` cannot send an Authorization
 * header, and a token in the URL would be written to access logs. Resolves when the stream ends
 * (the server closed it, or `signal` aborted it); rejects with an `ApiError` on a refusal (401 ends
 * the session, as for `request`) or when Tern cannot be reached. `lastEventId` resumes exactly.
 */
export async function readStream(
  path: string,
  opts: {
    lastEventId?: string | undefined;
    signal: AbortSignal;
    /** The stream is open (its headers are in): what follows is live. */
    onOpen(): void;
    onMessage(m: StreamMessage): void;
  },
): Promise<void> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  let res: Response;
  try {
    res = await fetch(path, { headers, credentials: 'omit', cache: 'no-store', signal: opts.signal });
  } catch {
    if (opts.signal.aborted) return;
    throw new ApiError(0, 'Tern cannot be reached. Check that it is running, then retry.');
  }
  if (!res.ok || !res.body) {
    let message = `${res.status} ${res.statusText}`;
    let code: string | undefined;
    try {
      const err = (await res.json()) as { message?: unknown; code?: unknown };
      if (typeof err.message === 'string') message = err.message;
      if (typeof err.code === 'string') code = err.code;
    } catch {
      // Not JSON: keep the status line.
    }
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, message, code);
  }
  opts.onOpen();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
      // A message ends with a blank line; comment lines (`: keep-alive`) carry nothing.
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (id !== undefined && data.length > 0) opts.onMessage({ id, data: data.join('\n') });
      }
    }
  } catch {
    if (opts.signal.aborted) return;
    throw new ApiError(0, 'The event stream was cut.');
  } finally {
    reader.releaseLock();
  }
}

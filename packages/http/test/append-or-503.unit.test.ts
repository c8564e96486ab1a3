import { EventLogUnavailableError } from '@tern/event-log';
import { describe, expect, it } from 'vitest';
import { appendOr503, HttpError } from '../src/index.js';

describe('appendOr503', () => {
  it("answers the event log's own EventLogUnavailableError with 503 LOG_UNAVAILABLE and Retry-After", async () => {
    const error = await appendOr503(async () => {
      throw new EventLogUnavailableError('broker down');
    }, 'queued').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    const http = error as HttpError;
    expect(http.statusCode).toBe(503);
    expect(http.message).toBe('Event log unavailable: nothing was queued, retry later');
    expect(http.extra).toEqual({ code: 'LOG_UNAVAILABLE' });
    expect(http.headers).toEqual({ 'retry-after': '5' });
  });

  it('says what was not done', async () => {
    const error = await appendOr503(async () => {
      throw new EventLogUnavailableError('timeout');
    }, 'accepted').catch((e: unknown) => e);
    expect((error as HttpError).message).toBe('Event log unavailable: nothing was accepted, retry later');
  });

  it('lets any other error go on unchanged, and passes a result through', async () => {
    const other = new Error('constraint violated');
    await expect(
      appendOr503(async () => {
        throw other;
      }, 'queued'),
    ).rejects.toBe(other);
    await expect(appendOr503(async () => 7, 'queued')).resolves.toBe(7);
  });
});

// SPEC §21: the relay's own id of a message, read from its answer to DATA, is what SES, Postmark
// and SendGrid notifications name the message by (recorded on email.sent as providerMessageId).
import { describe, expect, it } from 'vitest';
import { relayMessageId } from '../src/index.js';

describe('relayMessageId', () => {
  it.each([
    ['250 2.0.0 Ok: queued as 4Xb1cD2eF3', '4Xb1cD2eF3'], // Postfix
    ['250 Ok: queued as 3vKC2oI1QwKpyDpSYZlBmw', '3vKC2oI1QwKpyDpSYZlBmw'], // SendGrid
    ['250 Ok: queued as <b7bc2f4a-e38e-4336-af7d-e6c392c2f817>', 'b7bc2f4a-e38e-4336-af7d-e6c392c2f817'], // Postmark
    [
      '250 Ok 0100018c1c2a3b4d-5e6f7a8b-1c2d-4e5f-8a9b-0c1d2e3f4a5b-000000',
      '0100018c1c2a3b4d-5e6f7a8b-1c2d-4e5f-8a9b-0c1d2e3f4a5b-000000',
    ], // SES
  ])('%s → %s', (response, id) => {
    expect(relayMessageId(response)).toBe(id);
  });

  it.each(['250 Great success', '250 OK', '250 2.0.0 Ok', undefined, 42])('%s names no id', (response) => {
    expect(relayMessageId(response)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, isForbiddenAddress } from '../src/index.js';

const resolveTo = (addresses: string[]) => async () => addresses;

describe('webhook URL guard', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '224.0.0.1',
  ])('%s is forbidden', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    '%s is allowed',
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );

  const strict = (addresses: string[]) => ({ allowPrivate: false, resolve: resolveTo(addresses) });

  it('accepts an https URL resolving to public addresses only', async () => {
    expect(await checkWebhookUrl('https://hooks.example.com/x', strict(['93.184.216.34']))).toBeNull();
  });

  it('refuses http:// unless private targets are allowed', async () => {
    expect(await checkWebhookUrl('http://hooks.example.com/x', strict(['93.184.216.34']))).toMatch(
      /https:\/\//,
    );
    expect(await checkWebhookUrl('http://127.0.0.1:9/x', { allowPrivate: true })).toBeNull();
  });

  it('refuses a name resolving to any private address (one bad record is enough)', async () => {
    expect(
      await checkWebhookUrl('https://internal.example.com/', strict(['93.184.216.34', '10.0.0.5'])),
    ).toMatch(/private/);
  });

  it('refuses IP literals in forbidden ranges, bracketed IPv6 included', async () => {
    expect(await checkWebhookUrl('https://127.0.0.1/', strict([]))).toMatch(/loopback/);
    expect(await checkWebhookUrl('https://[::1]/', strict([]))).toMatch(/loopback/);
    expect(await checkWebhookUrl('https://169.254.169.254/latest', strict([]))).toMatch(/link-local/);
  });

  it('refuses a name that does not resolve, garbage, other schemes and credentials', async () => {
    const failing = {
      allowPrivate: false,
      resolve: async () => {
        throw new Error('ENOTFOUND');
      },
    };
    expect(await checkWebhookUrl('https://nowhere.invalid/', failing)).toMatch(/does not resolve/);
    expect(await checkWebhookUrl('not a url', strict([]))).toMatch(/absolute URL/);
    expect(await checkWebhookUrl('ftp://example.com/', strict(['93.184.216.34']))).toMatch(/https/);
    expect(await checkWebhookUrl('https://u:p@example.com/', strict(['93.184.216.34']))).toMatch(
      /credentials/,
    );
  });

  it('resolves localhost for real and refuses it', async () => {
    expect(await checkWebhookUrl('https://localhost/', { allowPrivate: false })).toMatch(/loopback/);
  });
});

import { describe, expect, it } from 'vitest';
import { bounceCategory, classifyUserAgent, domainOfAddress, providerOfMx } from '../src/index.js';

/** The three tables of SPEC §26: mailbox providers, bounce categories, clients. */

describe('mailbox provider (recipient domain, then its MX hosts)', () => {
  it.each([
    ['gmail.com', [], 'gmail'],
    ['GoogleMail.com', [], 'gmail'],
    ['hotmail.co.uk', [], 'outlook'],
    ['aol.com', [], 'yahoo'],
    ['me.com', [], 'icloud'],
    ['pm.me', [], 'proton'],
    ['web.de', [], 'gmx'],
    ['ya.ru', [], 'yandex'],
    ['bk.ru', [], 'mailru'],
    ['foxmail.com', [], 'qq'],
    // Custom domains, told by the MX hosts their providers publish.
    ['acme.example', ['aspmx.l.google.com.', 'alt1.aspmx.l.google.com'], 'google_workspace'],
    ['acme.example', ['smtp.google.com'], 'google_workspace'],
    ['acme.example', ['acme-example.mail.protection.outlook.com'], 'microsoft_365'],
    ['acme.example', ['mta5.am0.yahoodns.net'], 'yahoo'],
    ['acme.example', ['mx01.mail.icloud.com'], 'icloud'],
    ['acme.example', ['mail.protonmail.ch', 'mailsec.protonmail.ch'], 'proton'],
    ['acme.example', ['mx.zoho.eu'], 'zoho'],
    ['acme.example', ['mx00.emig.gmx.net'], 'gmx'],
    ['acme.example', ['mx.yandex.net'], 'yandex'],
    ['acme.example', ['emx.mail.ru'], 'mailru'],
    ['acme.example', ['mx1.qq.com'], 'qq'],
    ['acme.example', ['mx.acme.example'], 'other'],
    // A look-alike that only ends in a provider's name is not that provider.
    ['acme.example', ['mx.notgoogle.com'], 'other'],
    ['acme.example', [], 'other'],
  ])('%s with MX %j → %s', (domain, mx, provider) => {
    expect(providerOfMx(domain, mx)).toBe(provider);
  });

  it('takes the domain of an address, lowercased, with or without a display name', () => {
    expect(domainOfAddress('Ann <ann@Example.COM>')).toBe('example.com');
    expect(domainOfAddress('bob@mail.example.org')).toBe('mail.example.org');
    expect(domainOfAddress(null)).toBeNull();
    expect(domainOfAddress('no-at-sign')).toBeNull();
  });
});

describe('bounce category (enhanced status code and diagnostic)', () => {
  it.each([
    // Postfix's own DSNs (test/e2e/postfix-bounce.e2e.test.ts produces the first one).
    ['5.1.1', '550 5.1.1 <unknown@sink.test>: Recipient address rejected: User unknown', 'unknown_user'],
    [
      '5.1.1',
      'host mx.example.com[192.0.2.1] said: 550 5.1.1 <x@example.com>: Recipient address rejected: User unknown in virtual mailbox table (in reply to RCPT TO command)',
      'unknown_user',
    ],
    [
      '5.4.4',
      'Host or domain name not found. Name service error for name=nowhere.invalid type=AAAA: Host not found',
      'dns',
    ],
    [
      '5.2.2',
      'host mx.example.com[192.0.2.1] said: 552 5.2.2 Mailbox full (in reply to RCPT TO command)',
      'mailbox_full',
    ],
    [
      '5.7.1',
      'host mx.example.com[192.0.2.1] said: 554 5.7.1 Service unavailable; Client host [198.51.100.7] blocked using zen.spamhaus.org',
      'reputation',
    ],
    ['4.4.1', 'connect to mx.example.com[192.0.2.1]:25: Connection refused', 'dns'],
    // The providers' sample payloads (services/api/test/providers/providers.int.test.ts) and their docs.
    ['5.1.1', 'smtp; 550 5.1.1 user unknown', 'unknown_user'],
    ['5.1.1', 'smtp;550 5.1.1 user unknown', 'unknown_user'],
    [undefined, '5.1.1 user unknown', 'unknown_user'],
    ['550', '550 5.1.1 user unknown', 'unknown_user'],
    [
      '5.1.1',
      "550-5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's email address",
      'unknown_user',
    ],
    ['5.2.2', '552-5.2.2 The email account that you tried to reach is over quota.', 'mailbox_full'],
    [
      '5.7.1',
      '550-5.7.1 [198.51.100.7] Our system has detected that this message is likely unsolicited mail.',
      'spam_block',
    ],
    [
      '5.7.26',
      '550-5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users, and has been blocked. The sender must authenticate with at least one of SPF or DKIM.',
      'policy',
    ],
    [
      '5.7.1',
      "550 5.7.1 Unfortunately, messages from [198.51.100.7] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150).",
      'reputation',
    ],
    [
      '4.7.0',
      '421 4.7.0 [TSS04] Messages from 198.51.100.7 temporarily deferred due to user complaints',
      'reputation',
    ],
    ['5.7.1', '550 5.7.1 Relaying denied', 'policy'],
    ['5.7.1', undefined, 'policy'],
    ['5.2.2', undefined, 'mailbox_full'],
    ['5.3.0', 'something odd', 'other'],
    [undefined, undefined, 'other'],
  ])('%s / %s → %s', (status, diagnostic, category) => {
    expect(bounceCategory(status, diagnostic)).toBe(category);
  });
});

describe('client family and device type (bowser, mail clients first)', () => {
  it.each([
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
      'Apple Mail',
      'mobile',
    ],
    [
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)',
      'Apple Mail',
      'desktop',
    ],
    ['Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17029; Pro)', 'Outlook', 'desktop'],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:115.0) Gecko/20100101 Thunderbird/115.5.0',
      'Thunderbird',
      'desktop',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
      'Chrome',
      'desktop',
    ],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
      'Chrome',
      'mobile',
    ],
    [
      'Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
      'Safari',
      'tablet',
    ],
    ['Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0', 'Firefox', 'desktop'],
    ['curl/8.0', 'other', 'other'],
    [undefined, 'other', 'other'],
  ])('%s → %s on %s', (ua, client, device) => {
    expect(classifyUserAgent(ua)).toEqual({ client, device });
  });
});

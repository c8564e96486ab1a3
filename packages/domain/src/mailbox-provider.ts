/**
 * The recipient's mailbox provider (SPEC §26): the ONE table of providers, recognised first by
 * the recipient's domain (consumer domains a provider owns) and else by the host names of the
 * domain's MX records (a company's own domain hosted by Google Workspace, Microsoft 365, …).
 * Pure: resolving the MX hosts (through `DNS_SERVERS`, cached) is the projector's
 * (`services/projector/src/mailbox-resolver.ts`).
 */

export const MAILBOX_PROVIDERS = [
  'gmail',
  'google_workspace',
  'outlook',
  'microsoft_365',
  'yahoo',
  'icloud',
  'proton',
  'zoho',
  'gmx',
  'yandex',
  'mailru',
  'qq',
  'other',
] as const;
export type MailboxProvider = (typeof MAILBOX_PROVIDERS)[number];

/** Consumer domains: the domain alone names the provider (no lookup needed). */
const CONSUMER_DOMAINS: Record<string, MailboxProvider> = {
  'gmail.com': 'gmail',
  'googlemail.com': 'gmail',
  'outlook.com': 'outlook',
  'hotmail.com': 'outlook',
  'hotmail.co.uk': 'outlook',
  'hotmail.fr': 'outlook',
  'live.com': 'outlook',
  'msn.com': 'outlook',
  'yahoo.com': 'yahoo',
  'yahoo.co.uk': 'yahoo',
  'yahoo.fr': 'yahoo',
  'ymail.com': 'yahoo',
  'rocketmail.com': 'yahoo',
  'aol.com': 'yahoo',
  'icloud.com': 'icloud',
  'me.com': 'icloud',
  'mac.com': 'icloud',
  'proton.me': 'proton',
  'protonmail.com': 'proton',
  'pm.me': 'proton',
  'zoho.com': 'zoho',
  'zohomail.com': 'zoho',
  'gmx.com': 'gmx',
  'gmx.de': 'gmx',
  'gmx.net': 'gmx',
  'web.de': 'gmx',
  'yandex.ru': 'yandex',
  'yandex.com': 'yandex',
  'ya.ru': 'yandex',
  'mail.ru': 'mailru',
  'bk.ru': 'mailru',
  'inbox.ru': 'mailru',
  'list.ru': 'mailru',
  'qq.com': 'qq',
  'foxmail.com': 'qq',
};

/**
 * MX host patterns (lowercased, no trailing dot), first match wins. A custom domain whose MX is
 * Google's is `google_workspace` (gmail.com itself is caught by the domain table above); one on
 * Microsoft's Exchange Online Protection is `microsoft_365`.
 */
const MX_PATTERNS: readonly (readonly [RegExp, MailboxProvider])[] = [
  [/(^|\.)(google\.com|googlemail\.com|smtp\.goog)$/, 'google_workspace'],
  [/(^|\.)mail\.protection\.outlook\.com$/, 'microsoft_365'],
  [/(^|\.)(outlook\.com|hotmail\.com)$/, 'outlook'],
  [/(^|\.)(yahoodns\.net|yahoo\.com)$/, 'yahoo'],
  [/(^|\.)icloud\.com$/, 'icloud'],
  [/(^|\.)protonmail\.ch$/, 'proton'],
  [/(^|\.)(zoho\.com|zoho\.eu|zoho\.in|zohomail\.com)$/, 'zoho'],
  [/(^|\.)(gmx\.net|gmx\.com|web\.de)$/, 'gmx'],
  [/(^|\.)(yandex\.net|yandex\.ru)$/, 'yandex'],
  [/(^|\.)mail\.ru$/, 'mailru'],
  [/(^|\.)qq\.com$/, 'qq'],
];

const clean = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

/** The provider the domain alone names, or null when its MX hosts must tell. */
export function providerOfDomain(domain: string): MailboxProvider | null {
  return CONSUMER_DOMAINS[clean(domain)] ?? null;
}

/** The provider of a domain from its MX host names (any order); `other` when none matches. */
export function providerOfMx(domain: string, mxHosts: readonly string[]): MailboxProvider {
  const known = providerOfDomain(domain);
  if (known !== null) return known;
  for (const host of mxHosts.map(clean))
    for (const [pattern, provider] of MX_PATTERNS) if (pattern.test(host)) return provider;
  return 'other';
}

/** The domain part of an address (lowercased), or null. */
export function domainOfAddress(address: string | null | undefined): string | null {
  if (!address) return null;
  const at = address.lastIndexOf('@');
  if (at < 0) return null;
  const domain = clean(address.slice(at + 1).replace(/>.*$/, ''));
  return domain === '' ? null : domain;
}

/**
 * The bounce category of SPEC §26, from a bounce's enhanced status code (RFC 3463) and the
 * remote server's diagnostic: the ONE table. The diagnostic's words are checked first (they are
 * more specific: a 5.7.1 is a spam block or a policy refusal depending on them), then the code.
 */

export const BOUNCE_CATEGORIES = [
  'unknown_user',
  'mailbox_full',
  'policy',
  'spam_block',
  'dns',
  'reputation',
  'other',
] as const;
export type BounceCategory = (typeof BOUNCE_CATEGORIES)[number];

/** Diagnostic phrases, first match wins (order: the most specific first). */
const PHRASES: readonly (readonly [RegExp, BounceCategory])[] = [
  [
    /spamhaus|barracuda|spamcop|blocklist|blacklist|block ?list|listed (at|on|in)|\bRBL\b|\bDNSBL\b/i,
    'reputation',
  ],
  [
    /reputation|sender score|poor (ip|domain)|rate limited|unusual rate|too many (messages|connections)|user complaints|unexpected volume|\[TS[S0]\d\]/i,
    'reputation',
  ],
  [
    /spam|junk|unsolicited|content (rejected|blocked)|message (looks|appears)|bulk mail|phish|virus|malware/i,
    'spam_block',
  ],
  [
    /mailbox (is )?full|over ?quota|quota exceeded|insufficient (storage|space)|exceeded storage|mailbox size limit/i,
    'mailbox_full',
  ],
  [
    /user unknown|unknown user|no such user|does not exist|doesn'?t exist|recipient (address )?rejected|address rejected|invalid (recipient|mailbox|address)|mailbox (not found|unavailable)|no mailbox|undeliverable address|unrouteable address|not a valid|account (has been )?(disabled|deactivated)|user not found|recipient not found/i,
    'unknown_user',
  ],
  [
    /host (or domain name )?not found|name service error|nxdomain|no mx|domain (not found|does not exist)|dns|unable to resolve|no route to host|mx lookup|host unknown/i,
    'dns',
  ],
  [
    /dmarc|spf|dkim|policy|not (permitted|authorized|allowed)|relay(ing)? (access )?denied|access denied|authentication required|message too (big|large)|size exceeds|rejected (by|due to) (policy|recipient)/i,
    'policy',
  ],
];

/** Enhanced status codes (class stripped: `X.1.1`) when no phrase decides. */
const CODES: Record<string, BounceCategory> = {
  '1.1': 'unknown_user',
  '1.2': 'dns',
  '1.3': 'unknown_user',
  '1.6': 'unknown_user',
  '1.10': 'unknown_user',
  '2.1': 'unknown_user',
  '2.2': 'mailbox_full',
  '2.3': 'policy',
  '3.4': 'policy',
  '4.1': 'dns',
  '4.3': 'dns',
  '4.4': 'dns',
  '7.1': 'policy',
  '7.23': 'policy',
  '7.24': 'policy',
  '7.25': 'reputation',
  '7.26': 'policy',
  '7.27': 'dns',
  '7.28': 'spam_block',
};

const ENHANCED = /\b[245]\.(\d{1,3})\.(\d{1,3})\b/;

export function bounceCategory(
  smtpStatus: string | undefined,
  diagnostic: string | undefined,
): BounceCategory {
  const text = `${diagnostic ?? ''}`;
  for (const [pattern, category] of PHRASES) if (pattern.test(text)) return category;
  const code = ENHANCED.exec(smtpStatus ?? '') ?? ENHANCED.exec(text);
  if (code) return CODES[`${Number(code[1])}.${Number(code[2])}`] ?? 'other';
  // A bare reply code from a provider (550, 552, …).
  const reply = /^\s*(\d{3})\b/.exec(smtpStatus ?? '')?.[1];
  if (reply === '552') return 'mailbox_full';
  if (reply === '550' || reply === '551' || reply === '553') return 'unknown_user';
  return 'other';
}

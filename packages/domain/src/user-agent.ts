import Bowser from 'bowser';

/**
 * The client family and device type of a human open or click (SPEC §26), from its user agent:
 * mail clients that announce themselves (Outlook, Thunderbird, Apple Mail's bare WebKit, …) by
 * a small table, anything else by `bowser` (a maintained browser/OS parser). Bounded outputs:
 * a family is one of a known set of names or `other`, a device one of `DEVICE_TYPES`.
 */

export const DEVICE_TYPES = ['desktop', 'mobile', 'tablet', 'other'] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];
export type ClientInfo = { client: string; device: DeviceType };

/** Mail clients recognised before a browser parser looks: [pattern, family]. */
const MAIL_CLIENTS: readonly (readonly [RegExp, string])[] = [
  [/Microsoft Outlook|MSOffice|Outlook-iOS|Outlook-Android|ms-office/i, 'Outlook'],
  [/Thunderbird/i, 'Thunderbird'],
  [/YahooMailProxy|YahooMobileMail/i, 'Yahoo Mail'],
  [/GoogleImageProxy|Gmail/i, 'Gmail'],
  [/Airmail/i, 'Airmail'],
  [/Spark/i, 'Spark'],
];

/** Browser names kept as families; any other name is `other` (keeps the dimension small). */
const BROWSERS = new Set([
  'Chrome',
  'Safari',
  'Firefox',
  'Microsoft Edge',
  'Opera',
  'Samsung Internet for Android',
  'Android Browser',
  'Internet Explorer',
  'Yandex Browser',
  'UC Browser',
]);

const deviceOf = (platform: string | undefined): DeviceType =>
  platform === 'desktop' || platform === 'mobile' || platform === 'tablet' ? platform : 'other';

export function classifyUserAgent(userAgent: string | undefined): ClientInfo {
  if (userAgent === undefined || userAgent.trim() === '') return { client: 'other', device: 'other' };
  const parsed = Bowser.parse(userAgent);
  const device = deviceOf(parsed.platform.type);
  for (const [pattern, family] of MAIL_CLIENTS)
    if (pattern.test(userAgent)) return { client: family, device };
  const browser = parsed.browser.name ?? '';
  // Apple Mail loads images with the bare WebKit UA of the OS (no Safari/Version token).
  if (/AppleWebKit/.test(userAgent) && !/Safari|Chrome|CriOS|FxiOS/.test(userAgent))
    return { client: 'Apple Mail', device: device === 'other' ? 'desktop' : device };
  return { client: BROWSERS.has(browser) ? browser : 'other', device };
}

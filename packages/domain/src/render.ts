import { LRUCache } from 'lru-cache';
import Mustache from 'mustache';

/**
 * Template rendering (SPEC §11, §12) with Mustache: logic-less (`{{name}}`, `{{#list}}…{{/list}}`,
 * `{{^flag}}…{{/flag}}`, dotted names), so a template can never run code.
 *
 * - `html`: every `{{value}}` is HTML-escaped; `{{{value}}}` (or `{{& value}}`) inserts it raw, on
 *   purpose only.
 * - `subject` and `text` are plain text: nothing is escaped (an `&` stays `&`).
 * - A missing variable renders as the empty string (Mustache's rule, and SPEC §11's).
 * - The subject is one header line: line breaks a variable brings in become spaces, so a variable
 *   can never add a header.
 * - Partials (`{{> name}}`) render as nothing: templates are self-contained.
 */

export interface TemplateContent {
  subject: string;
  html: string | null;
  text: string | null;
}

/** Template text kept parsed, in all (UTF-16 units of the texts). */
export const PARSED_TEMPLATE_CHARS = 4 * 1024 * 1024;

/**
 * Parsed templates by their text, the most recently rendered kept up to `PARSED_TEMPLATE_CHARS`:
 * a campaign renders one template for every contact, so it is parsed once, not once per email
 * (issue 45 item 3: the parse was ≈ 1 % of a 100 000-contact campaign's CPU); an edited template's
 * old text ages out, where Mustache's own writer would keep every text it ever parsed.
 */
const parsedTemplates = new LRUCache<string, object>({
  maxSize: PARSED_TEMPLATE_CHARS,
  sizeCalculation: (_tokens, text) => Math.max(1, text.length),
});
let parses = 0;
const writer = new Mustache.Writer();
// Mustache asks `get` before each parse and `set`s only what it had to parse.
(writer as unknown as { templateCache: unknown }).templateCache = {
  get: (text: string) => parsedTemplates.get(text),
  set: (text: string, tokens: object) => {
    parses++;
    parsedTemplates.set(text, tokens);
  },
  clear: () => parsedTemplates.clear(),
};

/** Parses so far, and the parsed templates kept now: how many, their texts' length in all (tests, diagnostics). */
export const parsedTemplateStats = () => ({
  parses,
  entries: parsedTemplates.size,
  chars: parsedTemplates.calculatedSize,
});

const noPartials = () => undefined;
const plain = { escape: (value: unknown) => String(value) };
const html = { escape: Mustache.escape };

function render(template: string, variables: Record<string, unknown>, escaping: typeof plain): string {
  return writer.render(template, variables, noPartials, escaping);
}

/** Renders a template's parts with `variables`; a part that is null stays null. */
export function renderTemplate(
  template: TemplateContent,
  variables: Record<string, unknown>,
): TemplateContent {
  return {
    subject: render(template.subject, variables, plain).replace(/\r\n|[\r\n]/g, ' '),
    html: template.html === null ? null : render(template.html, variables, html),
    text: template.text === null ? null : render(template.text, variables, plain),
  };
}

/**
 * Why a template text cannot be parsed (an unclosed section, an unclosed tag…), or null when it
 * can. Checked when a template is saved, so rendering at send time never meets a syntax error.
 */
export function templateSyntaxError(template: string): string | null {
  try {
    writer.parse(template);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The longest subject kept (RFC 5322's line length, as `POST /emails/send` accepts). */
export const MAX_SUBJECT = 998;

/**
 * `subject` cut to `MAX_SUBJECT` UTF-16 units on a code point boundary: a cut between the two
 * halves of a surrogate pair (an emoji at 997–998) would leave a lone surrogate, which neither
 * Postgres nor a mail header can carry (issue 24, item 3).
 */
export function cutSubject(subject: string): string {
  if (subject.length <= MAX_SUBJECT) return subject;
  const last = subject.charCodeAt(MAX_SUBJECT - 1);
  return subject.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_SUBJECT - 1 : MAX_SUBJECT);
}

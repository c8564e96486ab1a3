import { createHash } from 'node:crypto';

const names = new Map<string, string>();

/**
 * The name of a prepared statement for `text` (pg's `name:`): Postgres then parses and plans it
 * once per connection instead of per request. Derived from the text, so a name always denotes the
 * same text (pg refuses a name reused for another text). Callers pass a bounded set of texts.
 */
export function preparedName(prefix: string, text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `${prefix}_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    if (names.size < 1000) names.set(text, name);
  }
  return name;
}

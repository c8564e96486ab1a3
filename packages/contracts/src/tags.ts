import { z } from 'zod';

/**
 * Tags of a send (SPEC §22): strings, or Resend's `{ name, value }`, stored as strings.
 */

/**
 * One tag (SPEC §22): a string, or Resend's `{ name, value }`, stored as `name:value`. Either way
 * 1..256 characters once stored.
 */
const tagSchema = z.union(
  [
    z
      .string({ error: 'tags must be strings or { name, value } objects' })
      .min(1, { error: 'a tag must not be empty' })
      .max(256, { error: 'a tag must be at most 256 characters' }),
    z.strictObject({
      name: z
        .string({ error: 'a tag name must be a string' })
        .min(1, { error: 'a tag name must not be empty' })
        .max(256, { error: 'a tag name must be at most 256 characters' }),
      value: z
        .string({ error: 'a tag value must be a string' })
        .max(256, { error: 'a tag value must be at most 256 characters' }),
    }),
  ],
  { error: 'tags must be strings or { name, value } objects' },
);

/** `tags` of a send (and a campaign): strings or `{ name, value }`, at most 50; read as strings. */
export const tagsSchema = z
  .array(tagSchema, { error: 'tags must be an array of strings or { name, value } objects' })
  .max(50, { error: 'tags must have at most 50 items' })
  .superRefine((tags, ctx) => {
    for (const [i, tag] of tags.entries())
      if (tagText(tag).length > 256)
        ctx.addIssue({
          code: 'custom',
          path: [i],
          message: 'a tag name:value must be at most 256 characters',
        });
  });

/** One tag as stored: a string as it is, Resend's `{ name, value }` as `name:value`. */
export const tagText = (tag: string | { name: string; value: string }): string =>
  typeof tag === 'string' ? tag : `${tag.name}:${tag.value}`;

/** Tags as stored (strings), from what a caller gave (SPEC §22). */
export const tagTexts = (tags: readonly (string | { name: string; value: string })[]): string[] =>
  tags.map(tagText);

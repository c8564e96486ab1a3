import { describe, expect, it } from 'vitest';
import { storableText, unstorableText } from '../src/storable.js';

// storableText makes a dead letter's text storable whatever it holds (the event log's and the
// projector's dead letters): U+0000 written as its escape, every lone surrogate replaced.

describe('storableText', () => {
  it('leaves storable text as it is, surrogate pairs included', () => {
    for (const text of ['', 'plain', 'a\\u0000 already escaped', 'emoji 😀 and é', '\uD83D\uDE00']) {
      expect(storableText(text)).toBe(text);
    }
  });

  it('writes every U+0000 as the six characters of its escape', () => {
    expect(storableText('a\u0000b\u0000')).toBe('a\\u0000b\\u0000');
    expect(storableText('\u0000')).toHaveLength(6);
  });

  it('replaces every lone surrogate, high or low, with U+FFFD, keeping pairs', () => {
    expect(storableText('x\uD800y\uDC00z\uD83D')).toBe('x\uFFFDy\uFFFDz\uFFFD');
    expect(storableText('\uDC00\uD83D\uDE00\uD800')).toBe('\uFFFD\uD83D\uDE00\uFFFD');
  });

  it('returns text that unstorableText finds nothing wrong with', () => {
    const worst = '\u0000\uD800\uDFFF\uDFFF\uD800\u0000';
    expect(unstorableText(worst)).not.toBeNull();
    const stored = storableText(worst);
    expect(stored).toBe('\\u0000\uD800\uDFFF\uFFFD\uFFFD\\u0000');
    expect(unstorableText(stored)).toBeNull();
  });
});

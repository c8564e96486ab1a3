import { describe, expect, it } from 'vitest';
import {
  PARSED_TEMPLATE_CHARS,
  parsedTemplateStats,
  renderTemplate,
  templateSyntaxError,
} from '../src/index.js';

const tpl = (subject: string, html: string | null, text: string | null) => ({ subject, html, text });

describe('renderTemplate', () => {
  it('parses a template once however often it renders, each time with its own variables', () => {
    const subject = `Hello {{firstName}} (${Math.random()})`;
    const before = parsedTemplateStats().entries;
    const out = ['Ann', 'Bo', 'Cy'].map((firstName) =>
      renderTemplate(tpl(subject, null, null), { firstName }),
    );
    expect(out.map((o) => o.subject.split(' (')[0])).toEqual(['Hello Ann', 'Hello Bo', 'Hello Cy']);
    expect(parsedTemplateStats().entries).toBe(before + 1);
  });

  it('keeps at most PARSED_TEMPLATE_CHARS of parsed text; an evicted template still renders', () => {
    const big = (n: number) => `${String(n).padStart(8, '0')}{{x}}${'.'.repeat(PARSED_TEMPLATE_CHARS / 4)}`;
    const texts = Array.from({ length: 4 }, (_, n) => big(n));
    for (const text of texts) renderTemplate(tpl('', null, text), { x: '!' });
    expect(parsedTemplateStats().chars).toBeLessThanOrEqual(PARSED_TEMPLATE_CHARS);
    // The least recently rendered went first: parsed again, and still right.
    const { parses } = parsedTemplateStats();
    expect(renderTemplate(tpl('', null, texts[0]!), { x: '!' }).text).toBe(texts[0]!.replace('{{x}}', '!'));
    expect(parsedTemplateStats().parses).toBe(parses + 1);
  });

  it('fills variables in subject, html and text', () => {
    const out = renderTemplate(tpl('Hi {{name}}', '<p>Hi {{name}}</p>', 'Hi {{name}}'), { name: 'Ada' });
    expect(out).toEqual({ subject: 'Hi Ada', html: '<p>Hi Ada</p>', text: 'Hi Ada' });
  });

  it('HTML-escapes variables in html only', () => {
    const v = { name: '<b>Tom & "Jerry"</b>' };
    const out = renderTemplate(tpl('To {{name}}', '<p>{{name}}</p>', 'To {{name}}'), v);
    expect(out.html).toBe('<p>&lt;b&gt;Tom &amp; &quot;Jerry&quot;&lt;&#x2F;b&gt;</p>');
    expect(out.subject).toBe('To <b>Tom & "Jerry"</b>');
    expect(out.text).toBe('To <b>Tom & "Jerry"</b>');
  });

  it('inserts raw HTML only with triple braces', () => {
    expect(renderTemplate(tpl('', '{{{x}}}|{{& x}}', null), { x: '<i>y</i>' }).html).toBe(
      '<i>y</i>|<i>y</i>',
    );
  });

  it('renders a missing variable as the empty string', () => {
    const out = renderTemplate(tpl('[{{a}}]', '<p>[{{a.b}}]</p>', '[{{c}}]'), {});
    expect(out).toEqual({ subject: '[]', html: '<p>[]</p>', text: '[]' });
  });

  it('keeps null parts null', () => {
    expect(renderTemplate(tpl('s', null, null), {})).toEqual({ subject: 's', html: null, text: null });
  });

  it('supports sections, inverted sections and dotted names', () => {
    const out = renderTemplate(
      tpl(
        '{{user.first}}',
        '{{#items}}<li>{{.}}</li>{{/items}}{{^items}}none{{/items}}',
        '{{^vip}}regular{{/vip}}',
      ),
      { user: { first: 'Ada' }, items: ['a', 'b'], vip: false },
    );
    expect(out).toEqual({ subject: 'Ada', html: '<li>a</li><li>b</li>', text: 'regular' });
  });

  it('never lets a variable add a line to the subject', () => {
    expect(renderTemplate(tpl('Hi {{x}}', null, null), { x: 'a\r\nBcc: evil@example.com\nz' }).subject).toBe(
      'Hi a Bcc: evil@example.com z',
    );
  });

  it('renders partials as nothing', () => {
    expect(renderTemplate(tpl('a{{> other}}b', null, null), {}).subject).toBe('ab');
  });
});

describe('templateSyntaxError', () => {
  it('accepts valid templates', () => {
    expect(templateSyntaxError('Hi {{name}} {{#a}}x{{/a}}')).toBeNull();
  });
  it('names an unclosed section or tag', () => {
    expect(templateSyntaxError('{{#a}} open')).toMatch(/Unclosed section "a"/);
    expect(templateSyntaxError('Hi {{name')).toMatch(/Unclosed tag/);
  });
});

import type { RenderTemplate, TemplateParts, Variables } from './ports.js';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

function fill(source: string, variables: Variables, asHtml: boolean): string {
  return source.replace(PLACEHOLDER, (_all, name: string) => {
    const value = Object.hasOwn(variables, name) ? variables[name] : undefined;
    const text = value === undefined || value === null ? '' : String(value);
    return asHtml ? escapeHtml(text) : text;
  });
}

/**
 * The minimal renderer the sender uses until the templates work provides `renderTemplate`
 * (`@tern/domain`): `{{name}}` placeholders, a missing variable → empty string, values
 * HTML-escaped in `html` only (SPEC §11).
 */
export const defaultRenderTemplate: RenderTemplate = (template: TemplateParts, variables: Variables) => ({
  subject: fill(template.subject, variables, false),
  html: template.html === null ? null : fill(template.html, variables, true),
  text: template.text === null ? null : fill(template.text, variables, false),
});

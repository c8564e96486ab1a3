import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { type Declared, fieldsOf, groupsOf, MAX_FIELDS, oversizedOptions } from './option-fields.js';

/** The declarations of one source text, as `declarations()` reads a folder's. */
function declare(text: string): Map<string, Declared> {
  const source = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const found = new Map<string, Declared>();
  for (const s of source.statements)
    if (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s))
      found.set(s.name.text, { node: s, file: 'x.ts', exported: true });
  return found;
}

const count = (declared: Map<string, Declared>, name: string) =>
  fieldsOf(declared.get(name)!.node, declared).size;

describe(`no plugin dependency type has more than ${MAX_FIELDS} fields (issue 41 item 3)`, () => {
  it('ApiRoutesOptions, ApiDeps, SendingAppDeps, their groups and every *RouteDeps / *RouteOptions of the api', () => {
    expect(oversizedOptions(), 'split the fields into small named groups, each of one domain').toEqual([]);
  });

  it('counts declared and inherited fields, type literals, intersections, Pick and Omit', () => {
    const declared = declare(`
      interface Big { a: 1; b: 2; c: 3; d: 4; e: 5 }
      interface Child extends Omit<Big, 'a' | 'b'> { f: 6; g?: 7 }
      type Picked = Pick<Big, 'a' | 'c'> & { x: 1; 'y': 2 };
      type Same = Pick<Big, 'a'> & { a: 1 };
      interface Opts extends Partial<Child> { big: Big; maybe?: Picked | undefined; n: number }
    `);
    expect(count(declared, 'Big')).toBe(5);
    expect(count(declared, 'Child')).toBe(5);
    expect(count(declared, 'Picked')).toBe(4);
    expect(count(declared, 'Same')).toBe(1);
    expect(count(declared, 'Opts')).toBe(8);
    expect(groupsOf('Opts', declared)).toEqual(['Big', 'Picked']);
  });

  it('reports a type over the limit, and refuses one it cannot count', () => {
    const wide = Array.from({ length: MAX_FIELDS + 1 }, (_, i) => `f${i}: number;`).join(' ');
    const declared = declare(`export interface ApiRoutesOptions { ${wide} }
      export interface ApiDeps extends ApiRoutesOptions {}
      export interface SendingAppDeps { a: 1 }
      export type FooRouteDeps = Pick<ApiRoutesOptions, 'f0'> & { x: 1 };
      export interface ApiRouteDeps { ${wide} }`);
    expect(oversizedOptions(declared)).toEqual([
      `x.ts ApiDeps: ${MAX_FIELDS + 1} fields`,
      `x.ts ApiRoutesOptions: ${MAX_FIELDS + 1} fields`,
    ]);
    expect(() => count(declare('type T = Pick<Elsewhere, "a"> & Elsewhere;'), 'T')).toThrow(/Elsewhere/);
  });
});

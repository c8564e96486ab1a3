import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { ROOT, sourceFiles } from './service-imports.js';

/**
 * No plugin dependency type has more than `MAX_FIELDS` fields (issue 41 item 3): a longer list
 * is split into small named groups, each of one domain (`ApiLimits`, `ApiPolicy`…), so a reader
 * (and a caller) sees what belongs together. Counted from the source alone, without a build: the
 * fields an interface declares and inherits, of a type literal, of an intersection; a
 * `Pick<X, 'a' | 'b'>` counts its picked keys, an `Omit<X, …>` what it leaves of X.
 */

export const MAX_FIELDS = 8;

/** Where the api's option types live. */
export const API_SRC = join(ROOT, 'services', 'api', 'src');

/** The inputs of `apiRoutes`, `createApiApp` and `createSendingApp`: checked with their groups. */
export const ROOT_OPTIONS = ['ApiRoutesOptions', 'ApiDeps', 'SendingAppDeps'] as const;

/**
 * Exported route plugin inputs, checked by their name. `ApiRouteDeps` is not one: it is the bag
 * `apiRoutes` builds once (its stores and services), of which each plugin picks its few fields.
 */
export const PLUGIN_INPUT = /^(?!ApiRouteDeps$)\w+Route(s)?(Deps|Options)$/;

type Declaration = ts.InterfaceDeclaration | ts.TypeAliasDeclaration;

export interface Declared {
  node: Declaration;
  file: string;
  exported: boolean;
}

/** Every interface and type alias declared at the top of the files of `dir`, by name. */
export function declarations(dir = API_SRC): Map<string, Declared> {
  const found = new Map<string, Declared>();
  for (const file of sourceFiles(dir)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      if (!ts.isInterfaceDeclaration(statement) && !ts.isTypeAliasDeclaration(statement)) continue;
      const exported =
        ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false;
      found.set(statement.name.text, { node: statement, file: relative(ROOT, file), exported });
    }
  }
  return found;
}

const literalKeys = (node: ts.TypeNode | undefined): string[] => {
  if (!node) return [];
  if (ts.isUnionTypeNode(node)) return node.types.flatMap(literalKeys);
  if (ts.isLiteralTypeNode(node) && ts.isStringLiteral(node.literal)) return [node.literal.text];
  throw new Error(`cannot read the keys of ${node.getText()}`);
};

const memberNames = (members: ts.NodeArray<ts.TypeElement>): string[] =>
  members.flatMap((m) =>
    m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)) ? [m.name.text] : [],
  );

/**
 * The field names of a type, given the declarations it may name; a type declared elsewhere (a
 * package's, a library's) cannot be counted here and throws, so nothing is silently skipped.
 */
export function fieldsOf(type: ts.Node, declared: ReadonlyMap<string, Declared>): Set<string> {
  const of = (node: ts.Node): string[] => {
    if (ts.isInterfaceDeclaration(node)) {
      const inherited = (node.heritageClauses ?? []).flatMap((c) =>
        c.types.flatMap((t) => reference(t.expression.getText(), t.typeArguments)),
      );
      return [...memberNames(node.members), ...inherited];
    }
    if (ts.isTypeAliasDeclaration(node)) return of(node.type);
    if (ts.isTypeLiteralNode(node)) return memberNames(node.members);
    if (ts.isIntersectionTypeNode(node)) return node.types.flatMap(of);
    if (ts.isParenthesizedTypeNode(node)) return of(node.type);
    if (ts.isTypeReferenceNode(node)) return reference(node.typeName.getText(), node.typeArguments);
    throw new Error(`cannot count the fields of ${node.getText()}`);
  };
  const reference = (name: string, args: ts.NodeArray<ts.TypeNode> | undefined): string[] => {
    if (name === 'Pick') return literalKeys(args?.[1]);
    if (name === 'Omit') {
      const omitted = new Set(literalKeys(args?.[1]));
      return of(args![0]!).filter((key) => !omitted.has(key));
    }
    if (name === 'Partial' || name === 'Required' || name === 'Readonly') return of(args![0]!);
    const target = declared.get(name);
    if (!target) throw new Error(`cannot count the fields of ${name}: not declared in the api`);
    return of(target.node);
  };
  return new Set(of(type));
}

/** The named types of a declaration's fields that are declared here: its groups (`limits: ApiLimits`). */
export function groupsOf(name: string, declared: ReadonlyMap<string, Declared>): string[] {
  const groups = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isPropertySignature(node) && node.type) {
      const named = (t: ts.TypeNode): void => {
        if (ts.isTypeReferenceNode(t) && declared.has(t.typeName.getText())) groups.add(t.typeName.getText());
        if (ts.isUnionTypeNode(t)) t.types.forEach(named);
      };
      named(node.type);
      return;
    }
    ts.forEachChild(node, visit);
  };
  const seen = new Set<string>();
  const walk = (n: string) => {
    if (seen.has(n)) return;
    seen.add(n);
    const d = declared.get(n);
    if (!d) return;
    visit(d.node);
    // What an interface inherits (`ApiDeps extends Omit<ApiRoutesOptions, …>`) brings its groups too.
    if (ts.isInterfaceDeclaration(d.node))
      for (const clause of d.node.heritageClauses ?? [])
        for (const t of clause.types) {
          const base = t.typeArguments?.[0];
          walk(base && ts.isTypeReferenceNode(base) ? base.typeName.getText() : t.expression.getText());
        }
  };
  walk(name);
  return [...groups].sort();
}

/** Each checked type of the api (`file name`) with more than `MAX_FIELDS` fields, and its count. */
export function oversizedOptions(declared = declarations()): string[] {
  const checked = new Set<string>();
  for (const name of ROOT_OPTIONS) {
    if (!declared.has(name)) throw new Error(`${name} is not declared in services/api/src`);
    checked.add(name);
    for (const group of groupsOf(name, declared)) checked.add(group);
  }
  for (const [name, d] of declared) if (d.exported && PLUGIN_INPUT.test(name)) checked.add(name);
  const out: string[] = [];
  for (const name of [...checked].sort()) {
    const d = declared.get(name)!;
    const count = fieldsOf(d.node, declared).size;
    if (count > MAX_FIELDS) out.push(`${d.file} ${name}: ${count} fields`);
  }
  return out;
}

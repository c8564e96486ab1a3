import { describe, expect, it } from 'vitest';
import { documentedOwners, isIn, migratedTables, namesTable, tableUsers } from './table-owners.js';

describe('each table has one owner (docs/architecture.md § "Who owns a table")', () => {
  const tables = migratedTables();
  const owners = documentedOwners();
  const users = tableUsers();

  it('the doc names an owner for every table the migrations create, and no other', () => {
    expect([...owners.keys()].sort()).toEqual(tables);
  });

  it("a table's SQL appears only in its owner (and the migrations)", () => {
    const strays: string[] = [];
    for (const [table, files] of users) {
      const owner = owners.get(table)!;
      for (const file of files) if (!isIn(file, owner)) strays.push(`${file} ${table}`);
    }
    expect(strays, "move this SQL into its owner, or embed the owner's fragment (`<thing>Sql`)").toEqual([]);
  });

  it('recognises a table named in SQL or as a literal, not in prose or another name', () => {
    expect(namesTable('SELECT 1 FROM email_logs l', 'email_logs')).toBe(true);
    expect(namesTable("table: 'email_events'", 'email_events')).toBe(true);
    expect(namesTable('TRUNCATE TABLE IF EXISTS x', 'x')).toBe(true);
    expect(namesTable('UPDATE email_logs_v2 SET', 'email_logs')).toBe(false);
    expect(namesTable("import './contacts.js'", 'contacts')).toBe(false);
    expect(namesTable('the contacts of a tenant', 'contacts')).toBe(false);
  });
});

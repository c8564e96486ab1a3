import { describe, expect, it } from 'vitest';
import { splitClickHouseStatements } from '../src/migrations.js';

describe('splitClickHouseStatements', () => {
  it('splits on a semicolon at the end of a line', () => {
    const sql =
      'CREATE TABLE a (x UInt8) ENGINE = Memory;\nCREATE TABLE b\n(\n  y UInt8\n)\nENGINE = Memory;\n';
    expect(splitClickHouseStatements(sql)).toEqual([
      'CREATE TABLE a (x UInt8) ENGINE = Memory',
      'CREATE TABLE b\n(\n  y UInt8\n)\nENGINE = Memory',
    ]);
  });

  it('keeps semicolons inside a line and in comment lines', () => {
    const sql = [
      '-- header; with a semicolon;',
      "CREATE TABLE a (x UInt8 COMMENT 'one; two') ENGINE = Memory;",
      '-- trailing comment only;',
      '',
    ].join('\n');
    expect(splitClickHouseStatements(sql)).toEqual([
      "-- header; with a semicolon;\nCREATE TABLE a (x UInt8 COMMENT 'one; two') ENGINE = Memory",
    ]);
  });

  it('accepts a last statement without a semicolon and CRLF line ends', () => {
    expect(splitClickHouseStatements('SELECT 1;\r\n  SELECT 2  ')).toEqual(['SELECT 1', 'SELECT 2']);
  });

  it('returns nothing for a file of comments and blank lines', () => {
    expect(splitClickHouseStatements('-- nothing here;\n\n   \n')).toEqual([]);
  });
});

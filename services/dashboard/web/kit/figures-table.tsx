// A table of figures: a row header, then columns (right-aligned when they are figures), in a
// region that scrolls sideways on narrow screens.
import type { ComponentChildren } from 'preact';
import { TableWrap } from '../table.js';

/** A rate as shown in every table: `12.5%`. */
export const percent = (n: number) => `${n.toFixed(1)}%`;

export interface Column<R> {
  label: ComponentChildren;
  /** A figure: right-aligned (`.num`). */
  num?: boolean;
  /** The cell's `data-stat` (what a test reads it by). */
  stat?: string;
  cell: (row: R, index: number) => ComponentChildren;
}

/** A figures column: `label`, right-aligned, its cell `cell(row)`. */
export const num = <R,>(label: string, cell: (row: R) => ComponentChildren, stat?: string): Column<R> => ({
  label,
  num: true,
  cell,
  ...(stat === undefined ? {} : { stat }),
});

export interface FiguresTableProps<R> {
  /** The scrolling region's accessible name. */
  label: string;
  testId: string;
  /** The first column is the rows' header (`th scope="row"`). */
  columns: Column<R>[];
  rows: R[];
  rowKey: (row: R, index: number) => string | number;
  /** Attributes of each `tr` (`data-*` a test finds a row by). */
  rowAttrs?: (row: R, index: number) => Record<string, string | number>;
}

export function FiguresTable<R>({ label, testId, columns, rows, rowKey, rowAttrs }: FiguresTableProps<R>) {
  const [head, ...rest] = columns;
  return (
    <TableWrap label={label}>
      <table data-testid={testId}>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={i} scope="col" class={c.num ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={rowKey(r, i)} {...rowAttrs?.(r, i)}>
              <th scope="row">{head?.cell(r, i)}</th>
              {rest.map((c, j) => (
                <td key={j} class={c.num ? 'num' : undefined} data-stat={c.stat}>
                  {c.cell(r, i)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

// The list pieces of the pages (re-exported by ui.tsx): table, pager, empty state, list table.
import type { ComponentChildren } from 'preact';
import type { ApiError } from './api.js';
import { Alert, ErrorNotice, formatDate, Loading } from './ui.js';

/** A table that scrolls sideways on narrow screens; focusable so keyboard users can scroll it. */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section class="table-wrap" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

/** A table's head: a header cell per column. */
export function TableHead({ columns }: { columns: readonly string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** A cell of a moment: `<time>` with its date as shown. */
export function TimeCell({ at }: { at: string }) {
  return (
    <td>
      <time dateTime={at}>{formatDate(at)}</time>
    </td>
  );
}

/** A row's action: `children` as shown, `label` as heard (it names the row: "Delete ada@…"). */
export function RowButton({
  label,
  pressed,
  onClick,
  children,
}: {
  label: string;
  pressed?: boolean;
  onClick: () => unknown;
  children: ComponentChildren;
}) {
  return (
    <button type="button" class="secondary" aria-label={label} aria-pressed={pressed} onClick={onClick}>
      {children}
    </button>
  );
}

export interface PagerProps {
  page: number;
  totalPages: number;
  onPage: (page: number) => void;
  label: string;
  /**
   * The next page by the API's cursor (`meta.nextCursor`, SPEC §19: constant cost however deep),
   * where the list has one; without it "Older" asks for `page + 1`.
   */
  onNext?: (() => void) | undefined;
}

export function Pager({ page, totalPages, onPage, label, onNext }: PagerProps) {
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ← Newer
      </button>
      <span aria-live="polite">
        Page {page} of {Math.max(totalPages, 1)}
      </span>
      <button
        type="button"
        disabled={page >= totalPages}
        onClick={() => (onNext ? onNext() : onPage(page + 1))}
      >
        Older →
      </button>
    </nav>
  );
}

/** The pager of a `{ data, meta }` list answer, or nothing before the first answer. */
export const pagerOf = (
  meta: { page: number; totalPages: number } | undefined,
  onPage: (page: number) => void,
  label: string,
): PagerProps | undefined => meta && { page: meta.page, totalPages: meta.totalPages, onPage, label };

/** A `{ data }` list answer's load as ListTable's `load` and `items`. */
export const listOf = <T,>(load: {
  data?: { data: T[] };
  error?: ApiError | undefined;
  loading: boolean;
}) => ({
  load,
  items: load.data?.data,
});

/** What an empty list shows: that it is empty, and what to do first. */
export function EmptyState({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty" data-testid="empty">
      <p>
        <strong>{title}</strong>
      </p>
      {children}
    </div>
  );
}

/**
 * The list of a list page: the load's error (or "not served yet"), the error of a row action,
 * "Loading…" before the first answer, then the table — a header cell per column, `row` per
 * item — or `empty` when there is no item, and the pager of a paged list.
 */
export function ListTable<T>({
  load,
  items,
  what,
  label = `${what[0]?.toUpperCase()}${what.slice(1)}`,
  testId = what,
  columns,
  row,
  actionError,
  empty,
  pager,
}: {
  load: { data?: unknown; error?: ApiError | undefined; loading: boolean };
  items: readonly T[] | undefined;
  what: string;
  /** The table's accessible name: `what` with a capital unless told. */
  label?: string;
  /** The table's `data-testid`: `what` unless told. */
  testId?: string;
  columns: readonly string[];
  row: (item: T) => ComponentChildren;
  actionError?: string | undefined;
  empty?: ComponentChildren;
  pager?: PagerProps | undefined;
}) {
  return (
    <>
      {load.error && <ErrorNotice error={load.error} what={what} />}
      <Alert message={actionError} />
      {!load.data && load.loading && <Loading />}
      {items && (
        <>
          {items.length === 0 && empty !== undefined ? (
            empty
          ) : (
            <TableWrap label={label}>
              <table data-testid={testId}>
                <TableHead columns={columns} />
                <tbody>{items.map(row)}</tbody>
              </table>
            </TableWrap>
          )}
          {pager && <Pager {...pager} />}
        </>
      )}
    </>
  );
}

// The detail pages' shape: one thing loaded, its page, the way back, its edit and delete buttons.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { type ApiError, get } from '../api.js';
import { ConfirmButtons, ErrorNotice, Loading, Page, useLoad, usePoll } from '../ui.js';
import { BackLink, listLabel } from './list-page.js';

export interface Loaded<T> {
  data?: T;
  error?: ApiError | undefined;
  loading: boolean;
}

/** `/<list>/<id>` read: its path and its load. */
export function useDetail<T>(list: string, id: string) {
  const path = `/${list}/${encodeURIComponent(id)}`;
  return { path, load: useLoad(() => get<T>(path).then((r) => r.body), [path]) };
}

/**
 * The page of one thing of `/<list>`: titled "<noun> <its name>" (`noun` while it loads), the way
 * back to the list, the API's error, then `children(thing)` in a `div[data-testid=<noun>]` (with
 * `attrs(thing)`).
 */
export function DetailPage<T extends { name: string }>({
  load,
  noun,
  list,
  attrs,
  children,
}: {
  load: Loaded<T>;
  noun: string;
  list: string;
  attrs?: (thing: T) => Record<string, string | boolean>;
  children: (thing: T) => ComponentChildren;
}) {
  const t = load.data;
  return (
    <Page
      title={t ? `${noun} ${t.name}` : noun}
      actions={<BackLink to={`/${list}`} label={listLabel(list)} />}
    >
      {load.error && <ErrorNotice error={load.error} what={list} />}
      {!t && load.loading && <Loading />}
      {t && (
        <div data-testid={noun.toLowerCase()} {...attrs?.(t)}>
          {children(t)}
        </div>
      )}
    </Page>
  );
}

/** The id of a detail page's thing, as the last of its `dl.fields`. */
export function IdField({ id }: { id: string }) {
  return (
    <>
      <dt>Id</dt>
      <dd>
        <code>{id}</code>
      </dd>
    </>
  );
}

/**
 * A page that follows its thing for `followMs` after it opened or after the user's last action
 * (`refreshed`), reloading every `pollMs`: figures move without a reload.
 */
export function useFollow(pollMs: number, followMs: number, reload: () => void) {
  const [followFrom, setFollowFrom] = useState(() => Date.now());
  const following = Date.now() - followFrom < followMs;
  usePoll(following, pollMs, reload);
  const refreshed = () => {
    setFollowFrom(Date.now());
    reload();
  };
  return { following, refreshed };
}

/** The button that opens or closes a page's editor. */
export function EditToggle({
  editing,
  setEditing,
  label,
}: {
  editing: boolean;
  setEditing: (editing: boolean) => void;
  label: string;
}) {
  return (
    <button type="button" class="secondary" aria-expanded={editing} onClick={() => setEditing(!editing)}>
      {editing ? 'Close the editor' : label}
    </button>
  );
}

/**
 * A delete button that asks first: `label`, then `confirm` and "Keep". `onConfirm` is given
 * `close` (back to the button) to call when it should.
 */
export function DeleteButton({
  label,
  confirm,
  onConfirm,
}: {
  label: string;
  confirm: string;
  onConfirm: (close: () => void) => unknown;
}) {
  const [confirming, setConfirming] = useState(false);
  const close = () => setConfirming(false);
  return confirming ? (
    <ConfirmButtons label={confirm} onConfirm={() => onConfirm(close)} onKeep={close} />
  ) : (
    <button type="button" class="secondary" onClick={() => setConfirming(true)}>
      {label}
    </button>
  );
}

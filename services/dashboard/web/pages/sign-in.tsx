import { useEffect, useState } from 'preact/hooks';
import { parseToken, type Session } from '../session.js';

/**
 * Sign-in is the tenant's JWT (SPEC §18): pasted here, or carried by `#token=` from the
 * development banner or the tenant's identity provider. It is checked by the API on first use.
 */
export function SignInPage({
  notice,
  onSignIn,
}: {
  notice: string | undefined;
  onSignIn: (s: Session) => void;
}) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    document.title = 'Sign in · Tern';
  }, []);
  return (
    <main id="main" class="sign-in">
      <h1 id="page-title">Sign in to Tern</h1>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const session = parseToken(value);
          if (typeof session === 'string') setError(session);
          else onSignIn(session);
        }}
      >
        <label for="token">Dashboard token (JWT)</label>
        <textarea
          id="token"
          name="token"
          rows={4}
          autocomplete="off"
          spellcheck={false}
          aria-describedby="token-help"
          aria-invalid={error ? true : undefined}
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <p id="token-help" class="muted">
          In development, open the link that <code>npm start</code> prints (it ends in <code>#token=…</code>).
          The token stays in this tab only.
        </p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

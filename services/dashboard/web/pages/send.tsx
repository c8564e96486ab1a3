import { useState } from 'preact/hooks';
import { ApiError, post } from '../api.js';
import { useProject } from '../project.js';
import { navigate } from '../router.js';
import { Page } from '../ui.js';

const SANDBOX = [
  'delivered@sandbox.test',
  'bounced@sandbox.test',
  'complained@sandbox.test',
  'delayed@sandbox.test',
  'failed@sandbox.test',
];

/** SPEC §11 `POST /emails/send`; then the email's timeline, which follows it to its final status. */
export function SendPage() {
  const [form, setForm] = useState({
    from: 'hello@example.com',
    to: 'delivered@sandbox.test',
    subject: 'Hello from Tern',
    text: 'It works.',
  });
  const project = useProject();
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const field = (k: keyof typeof form) => ({
    id: `send-${k}`,
    value: form[k],
    onInput: (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value }),
  });

  return (
    <Page title="Send an email">
      <p class="muted">
        Without <code>SMTP_URL</code>, Tern sends through its sandbox: nothing leaves the machine, and the
        recipient decides the outcome ({SANDBOX.join(', ')}).
      </p>
      {project.id !== undefined && (
        <p class="notice" data-testid="send-project">
          The email belongs to the project “{project.name}” (chosen in the header).
        </p>
      )}
      <form
        class="panel"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          setBusy(true);
          try {
            // The chosen project (the header's switcher) is the email's: SPEC §16 `projectId`.
            const res = await post<{ id: string }>('/emails/send', {
              ...form,
              ...(project.id !== undefined ? { projectId: project.id } : {}),
            });
            navigate(`/emails/${encodeURIComponent(res.body.id)}`);
          } catch (err) {
            setError(err instanceof ApiError ? err.message : String(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <label for="send-from">From</label>
        <input required {...field('from')} />
        <label for="send-to">To</label>
        <input required list="sandbox-addresses" {...field('to')} />
        <datalist id="sandbox-addresses">
          {SANDBOX.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        <label for="send-subject">Subject</label>
        <input required {...field('subject')} />
        <label for="send-text">Text</label>
        <textarea rows={6} {...field('text')} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Send
        </button>
      </form>
    </Page>
  );
}

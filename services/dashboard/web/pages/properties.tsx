import { useState } from 'preact/hooks';
import { del, get, post } from '../api.js';
import { ActionForm, Field, Options } from '../kit/form.js';
import { TenantPage } from '../kit/list-page.js';
import { EmptyState, ListTable, listOf, RowButton } from '../table.js';
import { type ContactProperty, PROPERTY_TYPES } from '../types.js';
import { ConfirmButtons, formatDate, useLoad, useRowActions } from '../ui.js';

/**
 * SPEC §27 contact properties: typed definitions (string, number, boolean, date) whose values
 * contacts carry, checked on every write and CSV import; a segment filters on them.
 */
export function PropertiesPage() {
  const list = useLoad(() => get<{ data: ContactProperty[] }>('/contact-properties').then((r) => r.body), []);
  const [name, setName] = useState('');
  const [type, setType] = useState<ContactProperty['type']>('string');
  const [confirming, setConfirming] = useState<string | null>(null);
  const action = useRowActions(list.reload);
  // The list is read again even when the property is refused.
  const add = () =>
    post('/contact-properties', { name, type })
      .then(() => setName(''))
      .finally(list.reload);

  return (
    <TenantPage title="Contact properties">
      <ActionForm id="new-property" title="Define a property" submit="Add property" onSubmit={add}>
        <Field
          id="prop-name"
          label="Property name"
          required
          maxLength={64}
          aria-describedby="prop-name-help"
          value={name}
          onInput={setName}
        />
        <p class="muted" id="prop-name-help">
          A letter, then letters, digits or _ (the key on contacts and the CSV column, case-sensitive).
        </p>
        <label for="prop-type">Type</label>
        <select
          id="prop-type"
          value={type}
          onChange={(e) => setType(e.currentTarget.value as ContactProperty['type'])}
        >
          <Options items={PROPERTY_TYPES} />
        </select>
      </ActionForm>
      <ListTable
        {...listOf(list)}
        what="contact properties"
        label="Contact properties"
        testId="properties"
        columns={['Name', 'Type', 'Defined', 'Action']}
        actionError={action.error}
        empty={
          <EmptyState title="No contact property yet.">
            <p>
              Define one above (a plan, a signup date…): contacts then carry a value of it, set through the
              API or a CSV import column of the same name, and segments can filter on it.
            </p>
          </EmptyState>
        }
        row={(p) => (
          <tr key={p.name} data-id={p.name}>
            <th scope="row">
              <code>{p.name}</code>
            </th>
            <td>{p.type}</td>
            <td>
              <time dateTime={p.createdAt}>{formatDate(p.createdAt)}</time>
            </td>
            <td>
              {confirming === p.name ? (
                <ConfirmButtons
                  label={`Delete ${p.name} and its values`}
                  onConfirm={() => {
                    setConfirming(null);
                    return action.act(() => del(`/contact-properties/${encodeURIComponent(p.name)}`));
                  }}
                  onKeep={() => setConfirming(null)}
                />
              ) : (
                <RowButton label={`Delete ${p.name}`} onClick={() => setConfirming(p.name)}>
                  Delete
                </RowButton>
              )}
            </td>
          </tr>
        )}
      />
    </TenantPage>
  );
}

import { type ContactStore, checkPropertyValues } from '@tern/bulk';
import { httpError } from '@tern/http';

/**
 * The parts of a contact write checked against the tenant's own resources (SPEC §27): property
 * values against their definitions (a date stored as `…Z`), topic choices against its topics.
 * A 400 naming the field otherwise.
 */
export async function checkContactExtras(
  contacts: Pick<ContactStore, 'propertyTypes' | 'unknownTopics'>,
  tenantId: string,
  body: {
    properties?: Record<string, string | number | boolean | null> | undefined;
    topics?: Record<string, 'opt_in' | 'opt_out' | null> | undefined;
  },
): Promise<{ properties?: Record<string, string | number | boolean | null> }> {
  const out: { properties?: Record<string, string | number | boolean | null> } = {};
  if (body.properties !== undefined && Object.keys(body.properties).length > 0) {
    const checked = checkPropertyValues(await contacts.propertyTypes(tenantId), body.properties);
    if ('error' in checked)
      throw httpError(400, `body.properties: ${checked.error}`, { code: 'FST_ERR_VALIDATION' });
    out.properties = checked.values;
  }
  if (body.topics !== undefined) {
    const unknown = await contacts.unknownTopics(tenantId, Object.keys(body.topics));
    if (unknown.length > 0)
      throw httpError(400, `body.topics: no topic ${unknown[0]} in this tenant (POST /topics)`, {
        code: 'FST_ERR_VALIDATION',
      });
  }
  return out;
}

import { z } from 'zod';
import { SCOPES } from './scope-names.js';

export { ROLES, type Role, SCOPES, type Scope } from './scope-names.js';

export const scopeSchema = z.enum(SCOPES, { error: `scope must be one of ${SCOPES.join(', ')}` });

export const MISSING_SCOPE_MESSAGE = 'Missing required API key scope';

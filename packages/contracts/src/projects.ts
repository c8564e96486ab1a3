import { z } from 'zod';

/** Projects (SPEC §16): a tenant's emails grouped; API keys may be bound to one. */

const name = z
  .string({ error: 'name must be a string of 1 to 100 characters' })
  .min(1, { error: 'name must be a string of 1 to 100 characters' })
  .max(100, { error: 'name must be a string of 1 to 100 characters' })
  .meta({ description: 'Display name.', example: 'Marketing site' });

export const createProjectBodySchema = z
  .strictObject({ name })
  .meta({ examples: [{ name: 'Marketing site' }] });
export type CreateProjectBody = z.infer<typeof createProjectBodySchema>;

export const updateProjectBodySchema = z
  .strictObject({ name })
  .meta({ examples: [{ name: 'Transactional' }] });
export type UpdateProjectBody = z.infer<typeof updateProjectBodySchema>;

export const projectSchema = z
  .object({
    id: z.string().meta({ description: 'Project id, `prj_…`.' }),
    name: z.string(),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
    updatedAt: z.string().meta({ description: 'ISO 8601.' }),
  })
  .meta({
    description: 'A project.',
    examples: [
      {
        id: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        name: 'Marketing site',
        createdAt: '2026-06-15T12:00:00.000Z',
        updatedAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Project = z.infer<typeof projectSchema>;

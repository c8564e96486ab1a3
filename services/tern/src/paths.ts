import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Source (src/) and bundle (dist/) both sit two levels below the repository root: keep this file in src/.
const here = dirname(fileURLToPath(import.meta.url));
export const MIGRATIONS = {
  postgres: resolve(here, '../../../infra/migrations/postgres'),
  clickhouse: resolve(here, '../../../infra/migrations/clickhouse'),
};
/** The dashboard's build (`npm run build` → `vite build`), served at `GET /` by the api service. */
export const DASHBOARD_DIR = resolve(here, '../../../services/dashboard/dist');

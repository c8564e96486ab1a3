/** Where `init` looks when `apiKey` / `baseUrl` are not given. */
export const API_KEY_ENV = 'TERN_API_KEY';
export const BASE_URL_ENV = 'TERN_BASE_URL';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RETRIES = 2;
export const DEFAULT_RETRY_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;
/** The iterator asks for the largest page the endpoint allows, to make the fewest requests. */
export const ITERATOR_PAGE_LIMIT = 100;

// Same text as `MISSING_SCOPE_MESSAGE` in @tern/contracts; kept as a literal because the SDK's
// runtime imports nothing (contracts pulls in zod). A unit test pins the two together.
export const MISSING_SCOPE_MESSAGE = 'Missing required API key scope';

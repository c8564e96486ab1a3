export { createPoller, type Poller, type PollerLogger, type PollerOptions } from './poller.js';

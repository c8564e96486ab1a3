export * from './ch-sink.js';
export * from './pg-sink.js';
export * from './projector.js';
export * from './rebuild.js';

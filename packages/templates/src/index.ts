// Templates (`templates`, SPEC §12): what the api's routes and analytics, packages/bulk, the
// sender and the worker's bulk mail read and write of them, named (no module's every export is
// public by accident).
export {
  createTemplateStore,
  deleteTemplate,
  getTemplate,
  insertTemplate,
  listTemplates,
  replaceTemplate,
  type TemplateContentInput,
  type TemplateStore,
  templateContent,
  templateExists,
  templateNames,
} from './store.js';

/** The simulator uses the core's canonical JSON: one serialisation for every hash in the project. */
export { CanonicalJsonError, canonicalJson, type JsonValue } from '../src/canonical-json.ts';

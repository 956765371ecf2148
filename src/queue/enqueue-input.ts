import { canonicalJson, sha256Hex } from '../canonical-json.ts';
import { validateNeeds } from './budgets.ts';
import { PRIORITY_RANGE } from './scoring.ts';
import type { EnqueueRequest, IncidentContext, Needs, QueueConfig, Tier } from './types.ts';

/** An enqueue request that passed validation, with its serialised parts ready for the store. */
export interface ValidEnqueue {
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  inputJson: string;
  store: string | null;
  tier: Tier;
  deadline: number | null;
  contextJson: string | null;
  /** Q1: hash of the normalised input fields (store, priority, payload, tier, deadline; needs and critical when given). */
  inputHash: string;
  /** A1: what one attempt needs of each budget (none: null). */
  needs: Needs | null;
  needsJson: string | null;
  /** A2: a trusted priority class. */
  critical: 0 | 1;
}

export type EnqueueValidation = { ok: true; value: ValidEnqueue } | { ok: false; field: string; message: string };

const CONTEXT_FIELDS: readonly (keyof IncidentContext)[] = ['brand', 'service', 'stage', 'errorCode', 'deployVersion', 'campaign'];

/**
 * Checks an enqueue request field by field. It never throws: a bad request is reported with the
 * field that was wrong, and the caller writes nothing.
 */
export function validateEnqueue(request: EnqueueRequest, config: QueueConfig): EnqueueValidation {
  if (request === null || typeof request !== 'object') return bad('request', 'expected an object');
  const { tenant, topic, version, priority } = request;
  if (typeof tenant !== 'string' || tenant.trim() === '') return bad('tenant', 'expected a non-empty string');
  if (typeof topic !== 'string' || topic.trim() === '') return bad('topic', 'expected a non-empty string');
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) {
    return bad('version', `expected a positive integer, got ${describe(version)}`);
  }
  // Q4: the base priority comes from trusted rules as an integer in PRIORITY_RANGE, never from payload text.
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < PRIORITY_RANGE.min || priority > PRIORITY_RANGE.max) {
    return bad('priority', `expected an integer from ${PRIORITY_RANGE.min} to ${PRIORITY_RANGE.max}, got ${describe(priority)}`);
  }
  if (!('input' in request) || request.input === undefined) return bad('input', 'is required (use null for no input)');
  let inputJson: string;
  try {
    inputJson = canonicalJson(request.input);
  } catch (error) {
    return bad('input', `is not JSON-serialisable: ${(error as Error).message}`);
  }
  const inputBytes = Buffer.byteLength(inputJson, 'utf8');
  if (inputBytes > config.maxInputBytes) {
    return bad('input', `is ${inputBytes} bytes as JSON, over the limit of ${config.maxInputBytes}`);
  }
  const store = request.store ?? null;
  if (store !== null && (typeof store !== 'string' || store === '')) return bad('store', 'expected a non-empty string');
  const tier = request.tier ?? 'standard';
  if (typeof tier !== 'string' || !Object.hasOwn(config.tierHolds, tier)) {
    return bad('tier', `expected one of ${Object.keys(config.tierHolds).join(', ')}, got ${describe(tier)}`);
  }
  const deadline = request.deadline ?? null;
  if (deadline !== null && (typeof deadline !== 'number' || !Number.isSafeInteger(deadline))) {
    return bad('deadline', `expected an integer time in ms, got ${describe(deadline)}`);
  }
  const context = checkContext(request.context);
  if (!context.ok) return context;
  const needs = validateNeeds(request.needs, config);
  if (!needs.ok) return needs;
  const critical = request.critical ?? false;
  if (typeof critical !== 'boolean') return bad('critical', `expected a boolean, got ${describe(critical)}`);
  const needsJson = needs.needs === null ? null : canonicalJson(needs.needs);
  const inputHash = sha256Hex(hashedText(inputJson, store, priority, tier, deadline, needsJson, critical));
  return {
    ok: true,
    value: {
      tenant,
      topic,
      version,
      priority,
      inputJson,
      store,
      tier: tier as Tier,
      deadline,
      contextJson: context.json,
      inputHash,
      needs: needs.needs,
      needsJson,
      critical: critical ? 1 : 0,
    },
  };
}

/**
 * Q1: the text the input hash is taken over, canonicalJson of `{ store, priority, payload, tier,
 * deadline }` with `needs` and `critical` joining only when given (so a task enqueued without them
 * hashes as before), written around the input and needs already serialised instead of serialising them
 * again: its keys in canonicalJson's order (critical, deadline, needs, payload, priority, store, tier).
 * enqueue-input.test.ts holds it equal to canonicalJson of that object.
 */
export function hashedText(inputJson: string, store: string | null, priority: number, tier: string, deadline: number | null, needsJson: string | null, critical: boolean): string {
  return `{${critical ? '"critical":true,' : ''}"deadline":${deadline === null ? 'null' : JSON.stringify(deadline)},${needsJson === null ? '' : `"needs":${needsJson},`}"payload":${inputJson},"priority":${JSON.stringify(priority)},"store":${JSON.stringify(store)},"tier":${JSON.stringify(tier)}}`;
}

function checkContext(context: unknown): { ok: true; json: string | null } | { ok: false; field: string; message: string } {
  if (context === undefined || context === null) return { ok: true, json: null };
  if (typeof context !== 'object' || Array.isArray(context)) return bad('context', 'expected an object');
  for (const [key, value] of Object.entries(context)) {
    if (!CONTEXT_FIELDS.includes(key as keyof IncidentContext)) {
      return bad(`context.${key}`, `unknown field; expected one of ${CONTEXT_FIELDS.join(', ')}`);
    }
    if (value !== undefined && value !== null && typeof value !== 'string') return bad(`context.${key}`, 'expected a string');
  }
  return { ok: true, json: canonicalJson(context) };
}

function bad(field: string, message: string): { ok: false; field: string; message: string } {
  return { ok: false, field, message: `${field} ${message}` };
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return typeof value;
}

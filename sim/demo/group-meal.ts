import type { IncidentCandidate, TaskState, WorkQueue } from '../../src/queue/types.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { epochMsDefault } from '../clock.ts';
import { SeededRandom } from '../random.ts';
import { claimNext, describeClaim, type DemoClaim } from './demo-worker.ts';
import { LogicalClock, since } from './logical-clock.ts';
import { contextFor, DEMO_TOPICS, enqueueRequest, investigationResult, type DemoTopic } from './topics.ts';

/**
 * Seed 000's scheduling replay on the real queue: four topics arrive together, one worker claims and
 * completes them one by one under a logical clock, and the incident-candidate view groups the three
 * paid reports while the unpaid one stands apart. The article's waits (5, 8, 11, 14 s) come out of
 * the script: first claim 5 s after arrival, each run 3 s of logical time.
 */

export const DEMO_SEED = 'seed-000/group-meal';
export const FIRST_CLAIM_AFTER_MS = 5_000;
export const RUN_MS = 3_000;
const WORKER_ID = 'worker-1';

export interface DemoTaskOutcome {
  taskId: number;
  topic: string;
  state: TaskState;
  outcome?: string;
  /** What the result says about the business problem; `done` does not mean resolved (Q12). */
  businessStatus: string;
}

export interface DemoCheck {
  claim: string;
  holds: boolean;
}

export interface GroupMealDemoResult {
  claims: DemoClaim[];
  tasks: DemoTaskOutcome[];
  incidentCandidates: IncidentCandidate[];
  standingApart: { taskId: number; topic: string; stage: string }[];
  checks: DemoCheck[];
}

export async function runGroupMealDemo(log: (line: string) => void = () => {}): Promise<GroupMealDemoResult> {
  const clock = new LogicalClock(epochMsDefault);
  const queue = openWorkQueue({ db: ':memory:', clock, random: new SeededRandom(DEMO_SEED) });
  try {
    log(`Seed 000, the four-topic example, on the real queue (SQLite :memory:, a logical clock moved by hand, seed '${DEMO_SEED}').`);
    const topicOf = await enqueueAll(queue, clock, log);
    log(`One worker; limits: ${queue.config.globalLimit} running globally, ${queue.config.perTenantLimit} per tenant, so this one tenant runs one task at a time.`);
    clock.advanceBy(FIRST_CLAIM_AFTER_MS);
    const claims = await workThrough(queue, clock, topicOf, log);
    const tasks = await finalStates(queue, topicOf);
    const { candidates, standingApart } = await incidentView(queue, clock, topicOf);
    logOutcome(tasks, candidates, standingApart, log);
    const checks = checkArticle(claims, tasks, candidates, standingApart, topicOf);
    log('Checks against the article:');
    for (const check of checks) log(`  ${check.holds ? 'ok    ' : 'FAILED'} ${check.claim}`);
    log('The waits come from moving a logical clock by hand; they measure nothing about speed.');
    return { claims, tasks, incidentCandidates: candidates, standingApart, checks };
  } finally {
    await queue.close();
  }
}

async function enqueueAll(queue: WorkQueue, clock: LogicalClock, log: (line: string) => void): Promise<Map<number, DemoTopic>> {
  const topicOf = new Map<number, DemoTopic>();
  for (const topic of DEMO_TOPICS) {
    const enqueued = await queue.enqueue(enqueueRequest(topic));
    if (!enqueued.ok) throw new Error(`enqueue of ${topic.topic} failed: ${enqueued.message}`);
    topicOf.set(enqueued.taskId, topic);
    log(`${since(clock.elapsedMs)}  enqueued task ${enqueued.taskId} ${topic.topic} (base priority ${topic.priority}, ${topic.paid ? 'paid' : 'unpaid'}): ${topic.summary}`);
  }
  return topicOf;
}

/** One worker: claim, run for RUN_MS of logical time, complete with a needs_human result; until empty. */
async function workThrough(queue: WorkQueue, clock: LogicalClock, topicOf: Map<number, DemoTopic>, log: (line: string) => void): Promise<DemoClaim[]> {
  const claims: DemoClaim[] = [];
  // Bounded: four topics, four claims; a fifth would mean the queue handed out a finished task.
  for (let order = 1; order <= topicOf.size + 1; order++) {
    const claim = await claimNext(queue, clock, WORKER_ID, order);
    if (claim === undefined) break;
    claims.push(claim);
    log(`${since(clock.elapsedMs)}  ${describeClaim(claim)}`);
    clock.advanceBy(RUN_MS);
    const topic = topicOf.get(claim.taskId) as DemoTopic;
    const completed = await queue.complete(claim.taskId, WORKER_ID, claim.generation, investigationResult(topic));
    if (!completed.ok) throw new Error(`complete of task ${claim.taskId} failed: ${completed.message}`);
    log(`${since(clock.elapsedMs)}  task ${claim.taskId} completed: outcome ${completed.outcome}; result says needs_human, with ${investigationResult(topic).evidence.length} pieces of evidence`);
  }
  return claims;
}

async function finalStates(queue: WorkQueue, topicOf: Map<number, DemoTopic>): Promise<DemoTaskOutcome[]> {
  return Promise.all([...topicOf.keys()].map(async (taskId) => {
    const view = await queue.get(taskId);
    if (view === undefined) throw new Error(`task ${taskId} vanished`);
    const result = view.result as { status?: string } | undefined;
    const outcome: DemoTaskOutcome = { taskId, topic: view.topic, state: view.state, businessStatus: result?.status ?? 'none' };
    if (view.outcome !== undefined) outcome.outcome = view.outcome;
    return outcome;
  }));
}

/** Q17: candidates of two or more; everything else stands apart and is investigated on its own. */
async function incidentView(queue: WorkQueue, clock: LogicalClock, topicOf: Map<number, DemoTopic>) {
  const candidates = await queue.incidentCandidates({ from: clock.startMs, to: clock.now() });
  const grouped = new Set(candidates.flatMap((candidate) => candidate.taskIds));
  const standingApart = [...topicOf]
    .filter(([taskId]) => !grouped.has(taskId))
    .map(([taskId, topic]) => ({ taskId, topic: topic.topic, stage: contextFor(topic).stage as string }));
  return { candidates, standingApart };
}

function logOutcome(tasks: DemoTaskOutcome[], candidates: IncidentCandidate[], standingApart: GroupMealDemoResult['standingApart'], log: (line: string) => void): void {
  log('Final states (Q12: done means the run ended; the business status lives in the result):');
  for (const task of tasks) log(`  task ${task.taskId} ${task.topic}: state ${task.state}, outcome ${task.outcome ?? '-'}, business status ${task.businessStatus}`);
  log(`Incident candidates (key: tenant, brand, service, stage, errorCode, deployVersion, campaign, 5-minute bucket): ${candidates.length}`);
  for (const candidate of candidates) {
    log(`  tasks ${candidate.taskIds.join(', ')}: stage ${candidate.stage}, ${candidate.errorCode}, ${candidate.deployVersion}, ${candidate.campaign}, confirmedIncident: ${candidate.confirmedIncident}`);
  }
  for (const apart of standingApart) {
    log(`Standing apart: task ${apart.taskId} ${apart.topic} (stage ${apart.stage}: the customer never paid, so it is investigated on its own)`);
  }
}

function checkArticle(
  claims: DemoClaim[],
  tasks: DemoTaskOutcome[],
  candidates: IncidentCandidate[],
  standingApart: GroupMealDemoResult['standingApart'],
  topicOf: Map<number, DemoTopic>,
): DemoCheck[] {
  const idsWhere = (test: (topic: DemoTopic) => boolean) => [...topicOf].filter(([, topic]) => test(topic)).map(([id]) => id);
  const paid = idsWhere((topic) => topic.paid);
  const unpaid = idsWhere((topic) => !topic.paid);
  const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b).join(',');
  return [
    { claim: 'the group meal is claimed first', holds: claims[0]?.taskId === idsWhere((topic) => topic.priority === 30)[0] },
    { claim: 'the queue waits are 5, 8, 11 and 14 s', holds: claims.map((claim) => claim.waitMs).join(',') === '5000,8000,11000,14000' },
    { claim: 'the three paid topics form exactly one incident candidate', holds: candidates.length === 1 && sorted(candidates[0]?.taskIds ?? []) === sorted(paid) },
    { claim: 'the unpaid topic is in no group', holds: unpaid.every((id) => standingApart.some((apart) => apart.taskId === id)) },
    { claim: 'every candidate says confirmedIncident: false', holds: candidates.every((candidate) => candidate.confirmedIncident === false) },
    { claim: 'every task is done and every result still says needs_human', holds: tasks.every((task) => task.state === 'done' && task.businessStatus === 'needs_human') },
  ];
}

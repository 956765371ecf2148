/**
 * A support agent (issue 33's example): its model reads a ticket, then, as one tool-call graph
 * (docs/tool-graphs.md), updates the ticket system and, once that update succeeded, e-mails the
 * customer. `correct.ts` and `buggy.ts` differ only in the e-mail tool: one hands its provider
 * `context.requestKey` as the idempotency key (W4), the other does not.
 *
 * Everything else a check needs is here and re-exported by both: the default export's shape
 * (`defineTicketAgent`), the workload and faults to run it under (`scenario`), each task's input
 * (`input`), what the twins of the ticket system and the mail service answer (`twins`), and one
 * invariant of the team's own (`invariants`).
 *
 * In your own project import from 'leasehold'; this example imports the source tree so it runs in the
 * repository without a build (.ci/pack-check rewrites the import and runs it from the installed package).
 */
import { defineAgent, ToolFailure, type AgentDefinition, type External, type Model, type ToolResult, type Tool } from '../../src/index.ts';

/** What a task carries: the ticket, its version (a customer's follow-up makes a new one), the customer. */
export interface TicketInput {
  ticket: string;
  version: number;
  customer: string;
  question: string;
}

/** T2: the input the model reads for each task the scenario's workload draws. */
export function input(task: { tenant: string; topic: string; version: number }): TicketInput {
  return {
    ticket: `${task.tenant}/${task.topic}`,
    version: task.version,
    customer: `${task.topic}@${task.tenant}.example`,
    question: task.version === 1 ? 'Where is my order?' : 'Any news on my order?',
  };
}

const usage = { inputTokens: 900, outputTokens: 120 };

/**
 * The model: step 0 reads the ticket; step 1 updates it and e-mails the customer, the e-mail depending on
 * the update (it runs only if the update succeeded, and is skipped otherwise); then the final answer
 * says whether the customer was told. A real adapter would ask an LLM; this one decides by rule, so a
 * takeover asks again and gets the same decision.
 */
export const model: Model = {
  async decide({ taskId, step, input: raw, messages }) {
    const ticket = raw as TicketInput;
    const id = (name: string) => `t${taskId}-s${step}-${name}`;
    if (step === 0) return { usage, toolCalls: [{ id: id('read'), tool: 'read_ticket', args: { ticket: ticket.ticket } }] };
    if (step === 1) {
      const reply = `Hello, about ticket ${ticket.ticket} (${ticket.question}): your order ships tomorrow.`;
      return {
        usage,
        toolCalls: [
          { id: id('update'), tool: 'update_ticket', args: { ticket: ticket.ticket, version: ticket.version, status: 'answered', reply }, resource: `ticket:${ticket.ticket}` },
          { id: id('email'), tool: 'email_customer', args: { to: ticket.customer, ticket: ticket.ticket, version: ticket.version, body: reply }, dependsOn: [id('update')], resource: `mail:${ticket.customer}` },
        ],
      };
    }
    const last = messages.at(-1);
    const results: readonly ToolResult[] = last?.role === 'tool' ? last.results : [];
    const emailed = results.some((result) => result.tool === 'email_customer' && result.status === 'ok');
    return { usage, toolCalls: [], final: { ticket: ticket.ticket, version: ticket.version, status: emailed ? 'answered' : 'needs_human' } };
  },
};

/** The ticket system's tools: a read, and an update keyed by the run's request key (W4). */
export function ticketTools(tickets: External): Tool[] {
  return [
    { name: 'read_ticket', readOnly: true, call: (args) => tickets.execute('get', args) },
    { name: 'update_ticket', readOnly: false, call: (args, context) => tickets.execute('update', args, { idempotencyKey: context.requestKey }) },
  ];
}

/**
 * The agent module's default export, given its e-mail tool. In production (`leasehold work --agent`)
 * `env.external` answers with the `externals` factories below, adapters over the real ticket and mail
 * APIs; in the simulator with twins of them (`twins` below), under the same `External` shape.
 */
export function defineTicketAgent(emailTool: (mail: External) => Tool): AgentDefinition {
  return defineAgent({
    externals: { tickets: () => httpExternal('TICKETS_URL'), mail: () => httpExternal('MAIL_URL') },
    build: (env) => ({ model, tools: [...ticketTools(env.external('tickets')), emailTool(env.external('mail'))] }),
  });
}

/**
 * A production adapter: the operation is POSTed to the system's URL with the key as an
 * `Idempotency-Key` header, which the system must dedupe on (W4). Errors become the classes the queue
 * understands: a 429 is retried later, a 5xx or a network failure too, a 4xx is a definite refusal.
 */
function httpExternal(variable: string): External {
  const base = process.env[variable];
  if (base === undefined || base === '') throw new Error(`${variable} is not set: the ticket agent needs the URL of its ${variable === 'MAIL_URL' ? 'mail service' : 'ticket system'}`);
  return {
    async execute(operation, payload, options) {
      let response: Response;
      try {
        const headers: Record<string, string> = { 'content-type': 'application/json', ...(options?.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey }) };
        response = await fetch(new URL(operation, base), { method: 'POST', headers, body: JSON.stringify(payload) });
      } catch (error) {
        throw new ToolFailure('transient_network', `${operation}: ${String(error)}`);
      }
      if (response.status === 429) throw new ToolFailure('rate_limited', `${operation}: 429`);
      if (!response.ok) throw new ToolFailure(response.status >= 500 ? 'transient_network' : 'business_error', `${operation}: HTTP ${response.status}`);
      return response.json();
    },
  };
}

/**
 * The twins' answers (T2): deterministic fakes of the two systems. Idempotency keys, latency, errors,
 * lost responses and the record of every execution are the simulator's; these say only what a
 * successful operation returns.
 */
export const twins = {
  tickets: () => ({
    execute(operation: string, payload: unknown, { executions }: { executions: number }) {
      const { ticket, status } = payload as { ticket: string; status?: string };
      if (operation === 'get') return { ticket, status: 'open' };
      if (operation === 'update') return { ticket, status, revision: executions + 1 };
      throw new ToolFailure('invalid_tool_schema', `the ticket system has no operation '${operation}'`);
    },
  }),
  mail: () => ({
    execute(operation: string, payload: unknown, { executions }: { executions: number }) {
      if (operation !== 'send') throw new ToolFailure('invalid_tool_schema', `the mail service has no operation '${operation}'`);
      return { messageId: `m-${executions + 1}`, to: (payload as { to: string }).to };
    },
  }),
};

/** What the twins' record shows of one request (a slice of the harness's TwinExecution). */
interface Execution {
  external: string;
  operation: string;
  payload: unknown;
  executed: boolean;
  taskId: number | undefined;
  index: number;
}

/**
 * T3: the team's own invariant, judged beside I1..I22 on every run: no customer gets two e-mails for
 * one version of a ticket (a new version, the customer's follow-up, rightly gets its own answer).
 */
export const invariants = [
  {
    name: 'one-email-per-ticket-version',
    check(run: { executions: readonly Execution[] }) {
      const sent = new Map<string, Execution[]>();
      for (const execution of run.executions) {
        if (execution.external !== 'mail' || execution.operation !== 'send' || !execution.executed) continue;
        const { to, ticket, version } = execution.payload as { to: string; ticket: string; version: number };
        const key = `${to} ${ticket} v${version}`;
        sent.set(key, [...(sent.get(key) ?? []), execution]);
      }
      return [...sent].filter(([, executions]) => executions.length > 1).map(([key, executions]) => ({
        message: `${key.split(' ')[0]} got ${executions.length} e-mails for ticket ${key.split(' ').slice(1).join(' ')} (history ${executions.map((execution) => execution.index).join(', ')})`,
        ...(executions[0]?.taskId === undefined ? {} : { taskId: executions[0].taskId }),
        at: executions.map((execution) => execution.index),
      }));
    },
  },
];

/**
 * The workload and faults the check runs the agent under: two tenants' tickets (some followed up as a
 * new version), three workers of two slots, and the catalogue's swarm of faults drawn per seed (kills at
 * every await, pauses, a busy database, power loss, restarts, clock jumps, tool errors, slow, hung and
 * lost answers). The same typed parts as a scenario file (docs/scenarios.md), validated by the same schema.
 */
export const scenario = {
  name: 'ticket-agent',
  description: 'support tickets read, updated and answered by e-mail, on three workers under swarm faults',
  source: 'examples/ticket-agent',
  queue: { globalLimit: 4, perTenantLimit: 3, capacity: 100 },
  workers: { count: 3, slots: 2 },
  model: { latencyMs: [500, 2000] },
  tools: { latencyMs: [100, 1500] },
  workload: [{ kind: 'topics', count: 12, tenants: ['acme', 'globex'], newVersionProbability: 0.3 }],
  faults: [{ kind: 'swarm' }],
};

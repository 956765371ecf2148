/**
 * The ticket agent with a correct e-mail tool: it hands the run's request key to the mail service as
 * the idempotency key (W4). A takeover that repeats the call after a crash sends the same key again,
 * and the service answers with the first result instead of sending a second e-mail.
 *
 *   leasehold check --agent examples/ticket-agent/correct.ts     # passes
 */
import type { External, Tool } from '../../src/index.ts';
import { defineTicketAgent } from './ticket-agent.ts';

export { input, invariants, scenario, twins } from './ticket-agent.ts';

const emailCustomer = (mail: External): Tool => ({
  name: 'email_customer',
  readOnly: false,
  call: (args, context) => mail.execute('send', args, { idempotencyKey: context.requestKey }),
});

export default defineTicketAgent(emailCustomer);

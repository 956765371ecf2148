/**
 * The ticket agent with a buggy e-mail tool: it calls the mail service without an idempotency key. When
 * a worker dies after the e-mail went out but before the effect ledger recorded it (or the service's
 * answer is lost and the call times out), the takeover repeats the call and the customer gets a second
 * e-mail. The check finds it: I8 names the task, and the team's own invariant says who got two e-mails.
 *
 *   leasehold check --agent examples/ticket-agent/buggy.ts       # fails: I8, with a replay line
 */
import type { External, Tool } from '../../src/index.ts';
import { defineTicketAgent } from './ticket-agent.ts';

export { input, invariants, scenario, twins } from './ticket-agent.ts';

const emailCustomer = (mail: External): Tool => ({
  name: 'email_customer',
  readOnly: false,
  // The bug: no { idempotencyKey: context.requestKey }, so every call is a new e-mail.
  call: (args) => mail.execute('send', args),
});

export default defineTicketAgent(emailCustomer);

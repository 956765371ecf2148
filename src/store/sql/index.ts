/**
 * The statement catalogue (issue 36 item 1): each table or concern declares its statements once, for
 * both dialects (statement.ts), and writes its StoreTx methods once, over the generic runner
 * (runner.ts). Both stores' statement classes take every operation here as their own.
 */
import { admissionOperations } from './admission.ts';
import { budgetOperations } from './budgets.ts';
import { checkpointOperations } from './checkpoints.ts';
import { claimOperations } from './claim.ts';
import { deadLetterOperations } from './dead-letters.ts';
import { effectOperations } from './effects.ts';
import { eventOperations } from './events.ts';
import { fairShareOperations } from './fair-share.ts';
import { holderOperations } from './holders.ts';
import { holdOperations } from './holds.ts';
import { migrationOperations } from './migrations.ts';
import { signalOperations } from './signals.ts';
import { taskWriteOperations } from './task-writes.ts';
import { taskOperations } from './tasks.ts';

export const OPERATIONS = {
  ...admissionOperations,
  ...budgetOperations,
  ...checkpointOperations,
  ...claimOperations,
  ...deadLetterOperations,
  ...effectOperations,
  ...eventOperations,
  ...fairShareOperations,
  ...holderOperations,
  ...holdOperations,
  ...migrationOperations,
  ...signalOperations,
  ...taskOperations,
  ...taskWriteOperations,
};

/** The StoreTx methods the catalogue writes: all but txSavepoint and txMarkClaimable, which each runner keeps its own (transaction control, a flag). */
export type OperationName = keyof typeof OPERATIONS;

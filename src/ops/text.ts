import type { DeadLetter, TaskState, TaskView } from '../queue/types.ts';
import type { StatusView, TaskDetail } from './model.ts';
import { cut, duration, instant, paint, renderTable, safeText, wrap, type Cell, type TextStyle, type Tone } from './table.ts';

/** O1: the operator's views as text for people (the same data `--json` prints whole). */

const STATE_TONES: Partial<Record<TaskState, Tone>> = { running: 'cyan', uncertain: 'yellow', failed: 'red', done: 'green', expired: 'dim', superseded: 'dim', cancelled: 'dim' };

export function stateCell(state: TaskState): Cell {
  const tone = STATE_TONES[state];
  return tone === undefined ? { text: state } : { text: state, tone };
}

function heading(text: string, style: TextStyle): string {
  return paint(text, 'bold', style);
}

export function formatStatus(view: StatusView, style: TextStyle): string {
  const { totals, limits } = view;
  // The limits are this process's configuration (--config, else the defaults), not necessarily the workers': counts only.
  const lines = [
    heading(cut(`Leasehold ${safeText(view.db)} at ${instant(view.at)}`, style.width), style),
    ...wrap(`live ${limits.live}, ready ${totals.ready}, running ${totals.running}, uncertain ${totals.uncertain}, dead letters ${totals.deadLetters}, paused tenants ${totals.pausedTenants}`, style.width),
    '',
    heading('Alerts', style),
    ...(view.alerts.length === 0
      ? [paint('  none', 'green', style)]
      : view.alerts.flatMap((alert) => wrap(`${alert.level === 'critical' ? 'CRITICAL' : 'warning'}: ${alert.text}`, style.width, '  ').map((line) => paint(line, alert.level === 'critical' ? 'red' : 'yellow', style)))),
    '',
    heading('Tenants', style),
    ...renderTable(
      [{ header: 'TENANT', flex: true }, { header: 'READY', align: 'right' }, { header: 'RUNNING', align: 'right' }, { header: 'UNCERTAIN', align: 'right' }, { header: 'OLDEST WAITING' }, { header: 'PAUSED' }],
      view.tenants.map((row) => [
        row.tenant,
        String(row.ready),
        String(row.running),
        row.uncertain > 0 ? { text: String(row.uncertain), tone: 'yellow' } : String(row.uncertain),
        row.oldestWaiting === undefined ? '-' : `task ${row.oldestWaiting.taskId}, ${duration(row.oldestWaiting.waitedMs)}`,
        row.paused ? { text: 'paused', tone: 'yellow' } : '',
      ]),
      style,
    ),
    '',
    heading('Running (leases)', style),
    ...renderTable(
      [{ header: 'TASK', align: 'right' }, { header: 'TENANT', flex: true }, { header: 'WORKER', flex: true }, { header: 'GEN', align: 'right' }, { header: 'AGE', align: 'right' }, { header: 'EXPIRES IN', align: 'right' }],
      view.running.map((lease) => [String(lease.taskId), lease.tenant, lease.workerId, String(lease.generation), duration(lease.ageMs), duration(lease.expiresInMs)]),
      style,
    ),
    '',
    heading('Uncertain (awaiting confirm-stopped)', style),
    ...renderTable(
      [{ header: 'TASK', align: 'right' }, { header: 'TENANT', flex: true }, { header: 'TOPIC', flex: true }, { header: 'WORKER', flex: true }, { header: 'GEN', align: 'right' }, { header: 'UNCERTAIN FOR', align: 'right' }, { header: 'CANCEL' }],
      view.uncertain.map((row) => [String(row.taskId), row.tenant, row.topic, row.workerId, String(row.generation), { text: duration(row.uncertainForMs), tone: 'yellow' }, row.cancelRequested ? 'requested' : '']),
      style,
    ),
  ];
  if (view.paused.length > 0) {
    lines.push('', heading('Paused tenants', style), ...renderTable([{ header: 'TENANT', flex: true }, { header: 'SINCE' }, { header: 'REASON', flex: true }], view.paused.map((pause) => [pause.tenant, instant(pause.at), pause.reason]), style));
  }
  if (view.budgets.length > 0) {
    lines.push(
      '',
      heading('Budgets', style),
      ...renderTable(
        [{ header: 'BUDGET', flex: true }, { header: 'SCOPE', flex: true }, { header: 'KIND' }, { header: 'LEVEL', align: 'right' }, { header: 'LIMIT', align: 'right' }],
        view.budgets.map((level) => [level.budget, level.scope === '' ? '(global)' : level.scope, level.kind, String(level.level), String(level.limit)]),
        style,
      ),
    );
  }
  lines.push(
    '',
    heading('Recent admission decisions', style),
    ...renderTable(
      [{ header: 'AT' }, { header: 'ACTION' }, { header: 'REASON', flex: true }, { header: 'TENANT', flex: true }, { header: 'TASK', align: 'right' }],
      view.recentDecisions.map((decision) => [instant(decision.at), decision.action, decision.reason, decision.tenant, decision.taskId === undefined ? '' : String(decision.taskId)]),
      style,
    ),
  );
  return lines.join('\n');
}

export function taskRows(tasks: readonly TaskView[]): (Cell | string)[][] {
  return tasks.map((task) => [String(task.id), task.tenant, task.topic, String(task.version), stateCell(task.state), String(task.priority), String(task.generation), String(task.attempts), task.workerId ?? '', instant(task.enqueuedAt)]);
}

export function formatTasks(listing: { total: number; tasks: TaskView[] }, style: TextStyle): string {
  const table = renderTable(
    [
      { header: 'ID', align: 'right' },
      { header: 'TENANT', flex: true },
      { header: 'TOPIC', flex: true },
      { header: 'VER', align: 'right' },
      { header: 'STATE' },
      { header: 'PRI', align: 'right' },
      { header: 'GEN', align: 'right' },
      { header: 'ATT', align: 'right' },
      { header: 'WORKER', flex: true },
      { header: 'ENQUEUED' },
    ],
    taskRows(listing.tasks),
    style,
  );
  const shown = listing.tasks.length < listing.total ? `${listing.tasks.length} of ${listing.total} tasks (newest first; --limit N for more)` : `${listing.total} task${listing.total === 1 ? '' : 's'}`;
  return [...table, paint(shown, 'dim', style)].join('\n');
}

export function formatTask(detail: TaskDetail, style: TextStyle): string {
  const { task } = detail;
  const field = (name: string, value: string | Cell) => {
    const cell = typeof value === 'string' ? { text: value } : value;
    return `${name.padEnd(12)} ${paint(cut(safeText(cell.text), Math.max(6, style.width - 13)), cell.tone, style)}`;
  };
  const lines = [
    heading(`Task ${task.id}`, style),
    field('tenant', task.tenant),
    field('topic', `${task.topic} v${task.version}`),
    field('state', stateCell(task.state)),
    field('priority', String(task.priority)),
    field('generation', String(task.generation)),
    field('attempts', `${task.attempts} (deliveries ${task.deliveries})`),
    field('worker', task.workerId ?? '-'),
    field('lease until', task.leaseUntil === undefined ? '-' : `${instant(task.leaseUntil)} (${duration(task.leaseUntil - detail.at)})`),
    field('enqueued', instant(task.enqueuedAt)),
  ];
  if (task.cancelRequested) lines.push(field('cancel', { text: 'requested', tone: 'yellow' }));
  if (task.outcome !== undefined) lines.push(field('outcome', task.outcome));
  // A failure reported by its worker has both; a run its total budget ended (A4) has a message only.
  const error = [task.errorClass, task.errorMessage].filter((part) => part !== undefined).join(': ');
  if (error !== '') lines.push(field('error', { text: error, tone: 'red' }));
  if (task.result !== undefined) lines.push(field('result', safeText(task.result)));
  if (detail.deadLetter !== undefined) lines.push(field('dead letter', { text: `${detail.deadLetter.reason} (${detail.deadLetter.reasons.join(', ')})`, tone: 'red' }));
  lines.push(
    '',
    heading('Events', style),
    ...renderTable(
      [{ header: 'SEQ', align: 'right' }, { header: 'AT' }, { header: 'TYPE' }, { header: 'BY', flex: true }, { header: 'DATA', flex: true }],
      // An event written under a lease records its worker and generation together.
      detail.events.map((event) => [String(event.seq), instant(event.at), event.type, event.workerId === undefined ? '' : `${event.workerId} g${String(event.generation)}`, safeText(event.data)]),
      style,
    ),
    '',
    heading('Last checkpoint', style),
    detail.lastCheckpoint === undefined
      ? paint('(none)', 'dim', style)
      : cut(`  ${detail.lastCheckpoint.kind} step ${detail.lastCheckpoint.step}, generation ${detail.lastCheckpoint.generation}, at ${instant(detail.lastCheckpoint.at)}, usage ${safeText(detail.lastCheckpoint.usage)}`, style.width),
    '',
    heading('Effects', style),
    ...renderTable(
      [{ header: 'REQUEST KEY', flex: true }, { header: 'ACTION', flex: true }, { header: 'GEN', align: 'right' }, { header: 'AT' }],
      detail.effects.map((effect) => [effect.requestKey, effect.action, String(effect.generation), instant(effect.at)]),
      style,
    ),
    '',
    heading('Reservations', style),
    ...renderTable(
      [{ header: 'BUDGET', flex: true }, { header: 'SCOPE', flex: true }, { header: 'GEN', align: 'right' }, { header: 'RESERVED', align: 'right' }, { header: 'CONSUMED', align: 'right' }, { header: 'RELEASED', align: 'right' }],
      detail.reservations.map((r) => [r.budget, r.scope === '' ? '(global)' : r.scope, String(r.generation), String(r.reserved), String(r.consumed), r.released === null ? 'held' : String(r.released)]),
      style,
    ),
    '',
    heading('Admission decisions', style),
    ...renderTable(
      [{ header: 'AT' }, { header: 'ACTION' }, { header: 'REASON', flex: true }, { header: 'RETRY AT' }],
      detail.admissionDecisions.map((d) => [instant(d.at), d.action, d.budget === undefined ? d.reason : `${d.reason} (${d.budget})`, d.retryAt === undefined ? '' : instant(d.retryAt)]),
      style,
    ),
  );
  return lines.join('\n');
}

export function formatDeadLetters(letters: readonly DeadLetter[], style: TextStyle): string {
  return [
    ...renderTable(
      [{ header: 'TASK', align: 'right' }, { header: 'TENANT', flex: true }, { header: 'TOPIC', flex: true }, { header: 'VER', align: 'right' }, { header: 'AT' }, { header: 'REASON' }, { header: 'HISTORY', flex: true }],
      letters.map((letter) => [String(letter.taskId), letter.tenant, letter.topic, String(letter.version), instant(letter.at), { text: letter.reason, tone: 'red' }, letter.reasons.join(', ')]),
      style,
    ),
    paint(`${letters.length} dead letter${letters.length === 1 ? '' : 's'}${letters.length > 0 ? '; run one again: leasehold redrive ID --db ...' : ''}`, 'dim', style),
  ].join('\n');
}

/**
 * O2, O3: the dashboard's page, its style and its script, shipped as strings (no bundler, no files to
 * find at run time). The HTML is a shell; the script fetches /api/... and builds the page with
 * createElement and textContent only, so no value from the database is ever parsed as markup (the
 * task's timeline is an SVG document shown through <img>, where no script can run either). The
 * Content-Security-Policy (server.ts) allows this script and this style sheet, nothing inline.
 */

function attribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The shell of every page: which page it is, the script reads from the location. */
export function pageHtml(config: { actions: boolean; refreshMs: number; db?: string; configuration?: string }): string {
  // Which queue, and the configuration its actions run with, in the header of every page (an attribute the script puts in as text).
  const where = config.db === undefined ? '' : `${config.db} (queue configuration: ${config.configuration ?? 'defaults'})`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Leasehold</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body data-actions="${attribute(String(config.actions))}" data-refresh="${attribute(String(config.refreshMs))}" data-where="${attribute(where)}">
<header>
  <a class="brand" href="/">Leasehold</a>
  <nav><a href="/">Overview</a> <a href="/dead-letters">Dead letters</a></nav>
  <span id="db" class="muted"></span>
  <span id="updated" class="muted"></span>
  <label id="token-box" hidden>token <input id="token" type="password" autocomplete="off" size="20"></label>
</header>
<div id="flash" role="status" hidden></div>
<main id="main"><p class="muted">Loading…</p></main>
</body>
</html>
`;
}

export const APP_CSS = `
:root { --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --bg: #f8f9fb; --warn: #b54708; --warnbg: #fffaeb; --crit: #b42318; --critbg: #fef3f2; --ok: #067647; --run: #175cd3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: 16px; align-items: center; padding: 10px 20px; background: #101828; color: #fff; }
header a { color: #fff; text-decoration: none; }
header nav a { margin-right: 12px; opacity: .85; }
header .muted { color: #98a2b3; }
.brand { font-weight: 700; font-size: 16px; }
main { padding: 16px 20px 40px; max-width: 1400px; }
h2 { font-size: 15px; margin: 22px 0 8px; }
.muted { color: var(--muted); }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 120px; }
.card .n { font-size: 24px; font-weight: 700; font-variant-numeric: tabular-nums; }
.card.warn { border-color: #fedf89; background: var(--warnbg); }
.card.crit { border-color: #fecdca; background: var(--critbg); }
.alert { padding: 8px 12px; border-radius: 6px; margin: 4px 0; }
.alert.warning { background: var(--warnbg); color: var(--warn); }
.alert.critical { background: var(--critbg); color: var(--crit); font-weight: 600; }
.alert.none { background: #ecfdf3; color: var(--ok); }
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); width: 100%; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); vertical-align: top; white-space: nowrap; }
td:last-child, td.wrap { white-space: normal; overflow-wrap: anywhere; }
th { background: #f2f4f7; font-weight: 600; font-size: 12px; color: #344054; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.empty td { color: var(--muted); font-style: italic; }
.state-running { color: var(--run); font-weight: 600; }
.state-uncertain { color: var(--warn); font-weight: 600; }
.state-failed { color: var(--crit); font-weight: 600; }
.state-done { color: var(--ok); }
pre { background: #fff; border: 1px solid var(--line); padding: 8px; overflow: auto; max-height: 240px; margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; border: 1px solid var(--line); padding: 10px 14px; margin: 0; }
dl.fields dt { color: var(--muted); }
dl.fields dd { margin: 0; overflow-wrap: anywhere; }
.timeline { background: #fff; border: 1px solid var(--line); overflow-x: auto; padding: 6px; }
.timeline img { min-width: 900px; width: 100%; }
button { font: inherit; padding: 3px 10px; border-radius: 6px; border: 1px solid #d0d5dd; background: #fff; cursor: pointer; }
button.armed { background: var(--critbg); border-color: var(--crit); color: var(--crit); }
#flash { margin: 10px 20px 0; padding: 8px 12px; border-radius: 6px; background: #eff8ff; color: #175cd3; }
#flash.error { background: var(--critbg); color: var(--crit); }
form.inline { display: flex; gap: 8px; align-items: center; margin: 8px 0; }
`;

/** The page script: plain ES2020 run by the browser, never by Node (its timers are the browser's). */
export const APP_JS = `'use strict';
(function () {
  var body = document.body;
  var actions = body.dataset.actions === 'true';
  var refreshMs = Number(body.dataset.refresh) || 2000;
  var main = document.getElementById('main');
  var flash = document.getElementById('flash');
  var tokenInput = document.getElementById('token');
  var armed = '';
  var timer = 0;
  var timelineTick = 0;

  function tokenFromHash() {
    var fromHash = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (fromHash) { sessionStorage.setItem('leasehold-token', decodeURIComponent(fromHash[1])); history.replaceState(null, '', location.pathname + location.search); }
    tokenInput.value = sessionStorage.getItem('leasehold-token') || '';
  }
  tokenFromHash();
  window.addEventListener('hashchange', tokenFromHash);
  if (actions) document.getElementById('token-box').hidden = false;
  tokenInput.addEventListener('change', function () { sessionStorage.setItem('leasehold-token', tokenInput.value); });

  function h(tag, props) {
    var node = document.createElement(tag);
    var p = props || {};
    Object.keys(p).forEach(function (key) {
      var value = p[key];
      if (value === undefined || value === null || value === false) return;
      if (key === 'text') node.textContent = String(value);
      else if (key === 'className') node.className = value;
      else if (key === 'onclick') node.addEventListener('click', value);
      else if (key === 'onsubmit') node.addEventListener('submit', value);
      else node.setAttribute(key, String(value));
    });
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  function duration(ms) {
    if (typeof ms !== 'number' || !isFinite(ms)) return '-';
    var a = Math.abs(ms), s = ms < 0 ? '-' : '';
    function pad(n) { return String(n).padStart(2, '0'); }
    if (a < 1000) return s + Math.round(a) + 'ms';
    if (a < 60000) return s + (a / 1000).toFixed(1) + 's';
    if (a < 3600000) return s + Math.floor(a / 60000) + 'm ' + pad(Math.floor(a / 1000) % 60) + 's';
    if (a < 86400000) return s + Math.floor(a / 3600000) + 'h ' + pad(Math.floor(a / 60000) % 60) + 'm';
    return s + Math.floor(a / 86400000) + 'd ' + pad(Math.floor(a / 3600000) % 24) + 'h';
  }
  function instant(ms) { return typeof ms === 'number' ? new Date(ms).toISOString().replace(/\\.\\d{3}Z$/, 'Z') : '-'; } // allow-ambient: formats an instant from the API, reads no clock
  function json(value) { return value === undefined ? '' : JSON.stringify(value); }
  function table(headers, rows, key) {
    return h('table', { 'data-table': key },
      h('thead', null, h('tr', null, headers.map(function (head) { return h('th', { className: head.num ? 'num' : '', text: head.label || head }); }))),
      h('tbody', null, rows.length === 0 ? h('tr', { className: 'empty' }, h('td', { colspan: headers.length, text: 'none' })) : rows));
  }
  function cell(value, props) { return h('td', Object.assign({ text: value }, props || {})); }
  function num(value, k) { return h('td', { className: 'num', text: value, 'data-k': k }); }
  function stateCell(state) { return h('td', { className: 'state-' + state, text: state, 'data-k': 'state' }); }
  function taskLink(id) { return h('td', { className: 'num' }, h('a', { href: '/task/' + encodeURIComponent(id), text: String(id) })); }

  function show(message, error) {
    flash.hidden = false;
    flash.className = error ? 'error' : '';
    flash.textContent = message;
  }

  function api(path) {
    return fetch(path, { headers: { accept: 'application/json' } }).then(function (response) {
      return response.json().then(function (body) {
        if (!response.ok) throw new Error((body && body.message) || ('HTTP ' + response.status));
        return body;
      });
    });
  }

  function act(name, payload, key) {
    return function (event) {
      var button = event.currentTarget;
      if (armed !== key) { armed = key; button.classList.add('armed'); button.textContent = 'confirm ' + name + '?'; return; }
      armed = '';
      var token = tokenInput.value || sessionStorage.getItem('leasehold-token') || '';
      fetch('/api/actions/' + name, { method: 'POST', headers: { 'content-type': 'application/json', 'x-leasehold-token': token }, body: JSON.stringify(payload) })
        .then(function (response) { return response.json().then(function (answer) { return { ok: response.ok, answer: answer }; }); })
        .then(function (r) { show(r.ok ? r.answer.message : ((r.answer.error || 'error') + ': ' + r.answer.message), !r.ok); load(); })
        .catch(function (error) { show(String(error), true); });
    };
  }
  function actionButton(name, label, payload, key) {
    if (!actions) return null;
    return h('button', { type: 'button', className: armed === key ? 'armed' : '', 'data-action': name, 'data-key': key, text: armed === key ? 'confirm ' + name + '?' : label, onclick: act(name, payload, key) });
  }

  function card(label, value, k, tone) {
    return h('div', { className: 'card ' + (tone || '') }, h('div', { className: 'muted', text: label }), h('div', { className: 'n', text: String(value), 'data-k': k }));
  }

  function overview(status) {
    var t = status.totals, l = status.limits;
    var parts = [];
    parts.push(h('div', { className: 'cards' },
      card('live', l.live, 'live'),
      card('ready', t.ready, 'ready'),
      card('running', t.running, 'running'),
      card('uncertain', t.uncertain, 'uncertain', t.uncertain > 0 ? 'warn' : ''),
      card('dead letters', t.deadLetters, 'dead-letters', t.deadLetters > 0 ? 'warn' : ''),
      card('paused tenants', t.pausedTenants, 'paused', t.pausedTenants > 0 ? 'warn' : ''),
      card('stuck alert', status.signals.alerts.stuckWhileCapacityNormal ? 'FIRING' : 'ok', 'stuck', status.signals.alerts.stuckWhileCapacityNormal ? 'crit' : '')));
    parts.push(h('h2', { text: 'Alerts' }));
    parts.push(h('div', { 'data-list': 'alerts' }, status.alerts.length === 0 ? h('div', { className: 'alert none', text: 'No alerts' }) : status.alerts.map(function (a) { return h('div', { className: 'alert ' + a.level, text: a.text }); })));
    parts.push(h('h2', { text: 'Tenants' }));
    parts.push(table(['tenant', { label: 'ready', num: true }, { label: 'running', num: true }, { label: 'uncertain', num: true }, 'oldest waiting', 'paused', ''], status.tenants.map(function (row) {
      return h('tr', { 'data-tenant': row.tenant }, cell(row.tenant), num(row.ready, 'ready'), num(row.running, 'running'), num(row.uncertain, 'uncertain'),
        row.oldestWaiting ? h('td', null, h('a', { href: '/task/' + row.oldestWaiting.taskId, text: 'task ' + row.oldestWaiting.taskId }), ' waited ' + duration(row.oldestWaiting.waitedMs)) : cell('-'),
        cell(row.paused ? 'paused' : ''),
        h('td', null, row.paused ? actionButton('resume', 'resume', { tenant: row.tenant }, 'resume:' + row.tenant) : null));
    }), 'tenants'));
    parts.push(h('h2', { text: 'Running' }));
    parts.push(table([{ label: 'task', num: true }, 'tenant', 'worker', { label: 'gen', num: true }, { label: 'lease age', num: true }, { label: 'expires in', num: true }], status.running.map(function (lease) {
      return h('tr', { 'data-task': lease.taskId }, taskLink(lease.taskId), cell(lease.tenant), cell(lease.workerId), num(lease.generation), num(duration(lease.ageMs)), num(duration(lease.expiresInMs)));
    }), 'running'));
    parts.push(h('h2', { text: 'Uncertain: awaiting confirm-stopped' }));
    parts.push(h('p', { className: 'muted', text: 'Confirm a task only once you know its worker is gone: a frozen worker that wakes is fenced off from the queue, not from your tools.' }));
    parts.push(table([{ label: 'task', num: true }, 'tenant', 'topic', 'worker', { label: 'gen', num: true }, { label: 'uncertain for', num: true }, 'cancel', ''], status.uncertain.map(function (row) {
      return h('tr', { 'data-task': row.taskId }, taskLink(row.taskId), cell(row.tenant), cell(row.topic), cell(row.workerId || '-'), num(row.generation), num(duration(row.uncertainForMs)), cell(row.cancelRequested ? 'requested' : ''),
        h('td', null, actionButton('confirm-stopped', 'confirm stopped', { taskId: row.taskId, generation: row.generation }, 'confirm:' + row.taskId + ':' + row.generation)));
    }), 'uncertain'));
    parts.push(h('h2', { text: 'Paused tenants' }));
    parts.push(table(['tenant', 'since', 'reason'], status.paused.map(function (p) { return h('tr', null, cell(p.tenant), cell(instant(p.at)), cell(p.reason)); }), 'paused'));
    if (actions) {
      var tenantField = h('input', { name: 'tenant', placeholder: 'tenant', required: true });
      var reasonField = h('input', { name: 'reason', placeholder: 'reason', required: true, size: 30 });
      parts.push(h('form', { className: 'inline', 'data-form': 'pause', onsubmit: function (event) {
        event.preventDefault();
        armed = 'pause:' + tenantField.value;
        act('pause', { tenant: tenantField.value, reason: reasonField.value }, armed)({ currentTarget: event.target.querySelector('button') });
      } }, 'Pause a tenant:', tenantField, reasonField, h('button', { type: 'submit', text: 'pause' })));
    }
    parts.push(h('h2', { text: 'Budgets' }));
    parts.push(table(['budget', 'scope', 'kind', { label: 'level', num: true }, { label: 'limit', num: true }], status.budgets.map(function (b) {
      return h('tr', null, cell(b.budget), cell(b.scope || '(global)'), cell(b.kind), num(b.level), num(b.limit));
    }), 'budgets'));
    parts.push(h('h2', { text: 'Recent admission decisions' }));
    parts.push(table(['at', 'action', 'reason', 'tenant', { label: 'task', num: true }], status.recentDecisions.map(function (d) {
      return h('tr', null, cell(instant(d.at)), cell(d.action), cell(d.budget ? d.reason + ' (' + d.budget + ')' : d.reason), cell(d.tenant), d.taskId === undefined ? cell('') : taskLink(d.taskId));
    }), 'decisions'));
    parts.push(h('h2', { text: 'Latencies' }));
    parts.push(table(['', { label: 'count', num: true }, { label: 'p50', num: true }, { label: 'p95', num: true }, { label: 'max', num: true }], [['wait (enqueue to first claim)', status.signals.waitMs], ['run (last claim to result)', status.signals.runMs]].map(function (pair) {
      var s = pair[1];
      return h('tr', null, cell(pair[0]), num(s.count), num(duration(s.p50 === null ? NaN : s.p50)), num(duration(s.p95 === null ? NaN : s.p95)), num(duration(s.max === null ? NaN : s.max)));
    }), 'latency'));
    return parts;
  }

  function field(name, value, k) { return [h('dt', { text: name }), h('dd', { text: value, 'data-k': k })]; }

  function taskPage(detail, id) {
    var task = detail.task;
    var parts = [h('h2', { text: 'Task ' + task.id })];
    parts.push(h('dl', { className: 'fields' },
      field('tenant', task.tenant, 'tenant'), field('topic', task.topic + ' v' + task.version, 'topic'),
      h('dt', { text: 'state' }), h('dd', { className: 'state-' + task.state, text: task.state, 'data-k': 'state' }),
      field('priority', task.priority), field('generation', task.generation, 'generation'), field('attempts', task.attempts + ' (deliveries ' + task.deliveries + ')'),
      field('worker', task.workerId || '-'), field('lease until', task.leaseUntil === undefined ? '-' : instant(task.leaseUntil) + ' (' + duration(task.leaseUntil - detail.at) + ')'),
      field('enqueued', instant(task.enqueuedAt)), field('cancel', task.cancelRequested ? 'requested' : 'no'),
      task.errorClass || task.errorMessage ? field('error', [task.errorClass, task.errorMessage].filter(function (part) { return part !== undefined; }).join(': '), 'error') : null,
      task.result !== undefined ? field('result', json(task.result), 'result') : null,
      detail.deadLetter ? field('dead letter', detail.deadLetter.reason + ' (' + detail.deadLetter.reasons.join(', ') + ')', 'dead-letter') : null));
    var buttons = [];
    if (task.state === 'ready' || task.state === 'running' || task.state === 'uncertain') buttons.push(actionButton('cancel', 'cancel', { taskId: task.id }, 'cancel:' + task.id));
    if (task.state === 'uncertain') buttons.push(actionButton('confirm-stopped', 'confirm stopped (generation ' + task.generation + ')', { taskId: task.id, generation: task.generation }, 'confirm:' + task.id + ':' + task.generation));
    if (detail.deadLetter) buttons.push(actionButton('redrive', 'redrive', { taskId: task.id }, 'redrive:' + task.id));
    if (actions) parts.push(h('p', null, buttons));
    parts.push(h('h2', { text: 'Timeline' }));
    parts.push(h('div', { className: 'timeline' }, h('img', { src: '/api/task/' + encodeURIComponent(id) + '/timeline.svg?n=' + (timelineTick++), alt: 'timeline of task ' + task.id, 'data-k': 'timeline' })));
    parts.push(h('h2', { text: 'Events' }));
    parts.push(table([{ label: 'seq', num: true }, 'at', 'type', 'by', 'data'], detail.events.map(function (e) {
      return h('tr', null, num(e.seq), cell(instant(e.at)), cell(e.type), cell(e.workerId ? e.workerId + ' g' + e.generation : ''), cell(json(e.data)));
    }), 'events'));
    parts.push(h('h2', { text: 'Last checkpoint' }));
    parts.push(detail.lastCheckpoint ? h('pre', { text: JSON.stringify(detail.lastCheckpoint, null, 2) }) : h('p', { className: 'muted', text: 'none' }));
    parts.push(h('h2', { text: 'Effects' }));
    parts.push(table(['request key', 'action', { label: 'gen', num: true }, 'at'], detail.effects.map(function (e) { return h('tr', null, cell(e.requestKey), cell(e.action), num(e.generation), cell(instant(e.at))); }), 'effects'));
    parts.push(h('h2', { text: 'Reservations' }));
    parts.push(table(['budget', 'scope', { label: 'gen', num: true }, { label: 'reserved', num: true }, { label: 'consumed', num: true }, { label: 'released', num: true }], detail.reservations.map(function (r) {
      return h('tr', null, cell(r.budget), cell(r.scope || '(global)'), num(r.generation), num(r.reserved), num(r.consumed), num(r.released === null ? 'held' : r.released));
    }), 'reservations'));
    parts.push(h('h2', { text: 'Admission decisions' }));
    parts.push(table(['at', 'action', 'reason', 'retry at'], detail.admissionDecisions.map(function (d) { return h('tr', null, cell(instant(d.at)), cell(d.action), cell(d.reason), cell(d.retryAt === undefined ? '' : instant(d.retryAt))); }), 'task-decisions'));
    return parts;
  }

  function deadLetters(answer) {
    return [h('h2', { text: 'Dead letters' }), h('p', { className: 'muted', text: 'Tasks delivered maxDeliveries times (or out of attempts or retry age) without finishing. Nothing replays them by itself: redrive one to give it a fresh set of attempts.' }),
      table([{ label: 'task', num: true }, 'tenant', 'topic', { label: 'ver', num: true }, 'at', 'reason', 'history', ''], answer.deadLetters.map(function (d) {
        return h('tr', { 'data-task': d.taskId }, taskLink(d.taskId), cell(d.tenant), cell(d.topic), num(d.version), cell(instant(d.at)), cell(d.reason), cell(d.reasons.join(', ')), h('td', null, actionButton('redrive', 'redrive', { taskId: d.taskId }, 'redrive:' + d.taskId)));
      }), 'dead-letters')];
  }

  function render(parts) {
    main.replaceChildren.apply(main, parts);
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString(); // allow-ambient: the operator's browser clock, it only labels the refresh
    body.dataset.loaded = String(Number(body.dataset.loaded || 0) + 1);
  }

  function load() {
    clearTimeout(timer);
    document.getElementById('db').textContent = body.dataset.where || '';
    var path = location.pathname;
    var taskMatch = /^\\/task\\/([^/]+)$/.exec(path);
    var work = taskMatch ? api('/api/task/' + taskMatch[1]).then(function (d) { render(taskPage(d, decodeURIComponent(taskMatch[1]))); })
      : path === '/dead-letters' ? api('/api/dead-letters').then(function (d) { render(deadLetters(d)); })
      : api('/api/status').then(function (s) { render(overview(s)); });
    work.catch(function (error) { show(String(error.message || error), true); }).then(function () { timer = setTimeout(load, refreshMs); }); // allow-ambient: the browser's refresh timer; nothing of the queue reads it
  }
  load();
})();
`;

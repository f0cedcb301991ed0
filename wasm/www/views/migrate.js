// A layout migration as the views show it (docs/migration.md §3, §7.3): the Migrate form (the
// target layout, the operator's gates "switch" and "finish", abort) and the progress of a run
// (state, pass, rows scanned, copied, rate, ETA; stragglers, conflicts and findings listed;
// the final state), from the events and result documents of the wasm package's migrators —
// the same members `rowkit s3 migrate --json` and `rowkit gold migrate --json` print. Nothing
// here knows which schema migrates: the bucket view runs `ObjectMetadata.migrateBucket`, the
// trace view `TraceStore.migrate` (its stragglers and conflicts are trace points, its result
// has no findings and ends in `cleaned` when migrated).
import { el, field } from './dom.js';

/** What each gate lets the run do, in one line (the CLI's `--switch` / `--finish` / `--abort`). */
export const GATE_HELP = {
  switch: 'Switch to the new layout: no writer unaware of the migration writes meanwhile (they are stopped, or there are none).',
  finish: 'Delete the old layout after the switch: no process of the old configuration is left.',
  abort: 'Roll back the migration in progress (before the switch) instead of going on.',
};

/** What comes next after a run that stopped in `state` (as the CLI's summary says). */
const NEXT = {
  verifying: 'run again with “switch” to switch',
  switched: 'run again with “finish” to delete the old layout',
};

/** `n` with thousands separators; `null`/`undefined` as a dash. */
const num = (n) => (n == null ? '—' : Number(n).toLocaleString('en'));

/** `s` seconds as people read a wait: `42 s`, `3 min 5 s`, `1 h 2 min`. */
export function duration(s) {
  if (s == null) return '—';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** A straggler or conflict as one line: a bucket's key, or a trace point (`{trace, commit, ts}`). */
function pointText(p) {
  if (p.trace !== undefined) return `${p.trace} at commit ${p.commit} (ts ${p.ts})`;
  return typeof p === 'string' ? p : p.key;
}

/** A conflict as one line: a bucket's key and both hashes, or a trace point. */
function conflictText(c) {
  return c.trace !== undefined ? pointText(c) : `${c.key} (from ${c.from_hash}, to ${c.to_hash ?? 'absent'})`;
}

/**
 * The one-line summary of a result document (`migrateBucket`'s and `rowkit s3 migrate
 * --json`'s, or `TraceStore.migrate`'s and `rowkit gold migrate --json`'s: no findings).
 */
export function resultLine(r, what) {
  const sum = (member) => r.passes.reduce((n, p) => n + p[member], 0);
  const counts = `${r.passes.length} pass${r.passes.length === 1 ? '' : 'es'}, ${num(sum('rows_scanned'))} rows scanned, `
    + `${num(sum('copied'))} copied, ${num(sum('deleted'))} deleted, ${r.stragglers.length} stragglers, `
    + `${r.conflicts.length} conflicts${r.findings ? `, ${r.findings.length} findings` : ''}`;
  const into = r.target_table ? ` in ${r.target_table}` : '';
  if (r.state === 'already') return `${what}: already ${r.to}, nothing to do`;
  if (r.state === 'cleaned') return `${what}: migrated to ${r.to}${into} (${counts})`;
  if (r.state === 'removed') return r.abort ? `${what}: migration rolled back (${counts})` : `${what}: migrated to ${r.to} (${counts})`;
  return `${what}: ${r.state} (${counts})${NEXT[r.state] ? `; ${NEXT[r.state]}` : ''}${r.blocked ? '; the clean-up is blocked: resolve what is listed below' : ''}`;
}

/**
 * The progress of one run: `{node, event(e), done(result, what), reset()}`. `event` takes each
 * event document (`{event: "progress" | "state_changed" | "straggler" | "conflict" |
 * "finding", …}`), `done` the result document. The figures are a `<dl>` (aria-live: a screen
 * reader hears the state changes, not every page's counters), the lists follow it.
 */
export function migrationProgress(id) {
  const figures = {};
  const dl = el('dl', { class: 'check-summary migrate-figures' });
  for (const [key, text] of [['state', 'State'], ['pass', 'Pass'], ['rows_scanned', 'Rows scanned'], ['copied', 'Copied'],
    ['deleted', 'Deleted'], ['rate', 'Rate'], ['eta', 'ETA']]) {
    figures[key] = el('dd', { dataset: { figure: key } }, '—');
    dl.append(el('dt', null, text), figures[key]);
  }
  const states = el('ol', { class: 'migrate-states', 'aria-label': 'State changes' });
  const lists = {};
  const listNodes = ['straggler', 'conflict', 'finding'].map((kind) => {
    lists[kind] = el('ul', { class: `migrate-${kind}s` });
    return el('div', { class: 'migrate-list', hidden: true }, el('h4', null, `${kind[0].toUpperCase()}${kind.slice(1)}s`), lists[kind]);
  });
  const final = el('p', { class: 'migrate-final', role: 'status' });
  const node = el('div', { id, class: 'migrate-progress', 'aria-live': 'polite' }, dl, states, ...listNodes, final);

  /** Adds `text` to the list of `kind` (shown from its first item). */
  function listed(kind, text) {
    lists[kind].append(el('li', null, el('code', null, text)));
    lists[kind].parentElement.hidden = false;
  }

  return {
    node,
    event(e) {
      switch (e.event) {
        case 'progress':
          figures.state.textContent = e.state;
          figures.pass.textContent = num(e.pass);
          figures.rows_scanned.textContent = num(e.rows_scanned);
          figures.copied.textContent = num(e.copied);
          figures.deleted.textContent = num(e.deleted);
          figures.rate.textContent = e.rate_rows_per_s == null ? '—' : `${num(e.rate_rows_per_s)} rows/s`;
          figures.eta.textContent = duration(e.eta_s);
          break;
        case 'state_changed':
          if (e.to) figures.state.textContent = e.to;
          states.append(el('li', null, `${e.from ?? 'no migration'} → ${e.to ?? 'no migration'}`));
          break;
        case 'straggler':
          listed('straggler', pointText(e));
          break;
        case 'conflict':
          listed('conflict', conflictText(e));
          break;
        case 'finding':
          listed('finding', e.message);
          break;
        default:
          break;
      }
    },
    done(result, what) {
      figures.state.textContent = result.state;
      // The result lists what the events listed, and what a resumed pass found before.
      for (const kind of ['straggler', 'conflict', 'finding']) lists[kind].replaceChildren();
      for (const p of result.stragglers) listed('straggler', pointText(p));
      for (const c of result.conflicts) listed('conflict', conflictText(c));
      for (const f of result.findings ?? []) listed('finding', f.message);
      final.textContent = resultLine(result, what);
      node.dataset.state = result.state;
    },
    reset() {
      for (const dd of Object.values(figures)) dd.textContent = '—';
      for (const list of Object.values(lists)) { list.replaceChildren(); list.parentElement.hidden = true; }
      states.replaceChildren();
      final.textContent = '';
      delete node.dataset.state;
    },
  };
}

/**
 * The Migrate form: the target layout (`layouts`: its values), the schema's own `fields`
 * (labelled controls, e.g. the trace store's target table; the caller reads them), the gates
 * as checkboxes (each explained in one line) and the run button. `{node, values(),
 * setTo(layout), clearGates(), setRunning(on)}`
 * (`setRunning` disables the button while a run goes on); `onRun` is called on submit. `prefix` names the controls' ids (`${prefix}-to`, `-switch`, `-finish`,
 * `-abort`, `-run`).
 */
export function migrateForm({ prefix, layouts, fields = [], onRun }) {
  const to = el('select', { id: `${prefix}-to`, name: 'to' }, layouts.map((l) => el('option', { value: l }, l)));
  const gate = (name) => {
    const box = el('input', { id: `${prefix}-${name}`, type: 'checkbox', name, 'aria-describedby': `${prefix}-${name}-help` });
    return [box, el('div', { class: 'migrate-gate' }, el('label', null, box, ` ${name}`),
      el('span', { id: `${prefix}-${name}-help`, class: 'help' }, GATE_HELP[name]))];
  };
  const [switchBox, switchRow] = gate('switch');
  const [finishBox, finishRow] = gate('finish');
  const [abortBox, abortRow] = gate('abort');
  const run = el('button', { id: `${prefix}-run`, dataset: { op: 'migrate-run' } }, 'Run migration');
  const form = el('form', { id: `${prefix}-form`, class: 'migrate-form', novalidate: true },
    field('Migrate to', to),
    ...fields,
    el('fieldset', { class: 'migrate-gates' }, el('legend', null, 'Gates'), switchRow, finishRow, abortRow),
    run);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!run.disabled) onRun();
  });
  return {
    node: form,
    values: () => ({ to: to.value, switch: switchBox.checked, finish: finishBox.checked, abort: abortBox.checked }),
    setTo(layout) { to.value = layout; },
    clearGates() { for (const box of [switchBox, finishBox, abortBox]) box.checked = false; },
    setRunning(on) {
      run.disabled = on;
      run.textContent = on ? 'Migrating…' : 'Run migration';
    },
  };
}

/**
 * This tab's name as a migrator (the checkpoint's lease owner, docs/migration.md §7.1): kept for
 * the tab's life (sessionStorage), so a reload resumes its own run at once while another tab
 * is refused until the lease ends.
 */
export function tabOwner() {
  const key = 'rowkit.migrator';
  let owner = sessionStorage.getItem(key);
  if (!owner) {
    owner = `browser:${[...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
    sessionStorage.setItem(key, owner);
  }
  return owner;
}

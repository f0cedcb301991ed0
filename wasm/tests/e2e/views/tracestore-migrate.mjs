// The trace view's Migrate action (docs/migration.md §5, §7.3, §11.6), as an operator uses it:
// the view's md5 table `gold` (tracestore.mjs's tiles plus the digest the view put) is migrated
// into `gold-digest-id`, an empty digest-id table the CLI set up beforehand (a page cannot set
// tables up).
//
// 1. A target table that does not exist (typed by the user): refused in one line naming the
//    `rowkit gold setup --table … --layout digest-id` that makes it; nothing runs.
// 2. The target typed, Run without gates: the run stops in `verifying` (no settle wait); the
//    progress, the state changes and the result line are on screen, the status names the run
//    in progress, and the grid still reads every trace of the newest tile.
// A run with switch and finish (two settle waits) is not driven here: the bucket view's e2e pays
// for that once (docs/migration.md §12).
import { assert } from '../webdriver.mjs';

/** The digest-id table the CLI sets up for the migration. */
export const TARGET = 'gold-digest-id';
/** A table nobody set up, typed first. */
const MISSING = 'gold-not-set-up';

export async function populate(cli) {
  await cli(['gold', '--table', TARGET, '--layout', 'digest-id', 'setup']);
}

/** The panel as on screen: status, figures, state changes, final line, alert, buttons. */
function panel(page) {
  return page.js(`const p = document.getElementById('gold-migrate');
    const fig = Object.fromEntries([...p.querySelectorAll('dd[data-figure]')].map((d) => [d.dataset.figure, d.textContent]));
    return { hidden: p.hidden, status: document.getElementById('gold-migrate-status').textContent, fig,
      states: [...p.querySelectorAll('.migrate-states li')].map((li) => li.textContent),
      final: p.querySelector('.migrate-final').textContent, state: document.getElementById('gold-migrate-progress').dataset.state ?? null,
      alert: document.querySelector('#gold-migrate-out [role="alert"]')?.textContent ?? null,
      run: document.getElementById('gold-migrate-run').disabled };`);
}

/** Waits until the run ended (a final state, or an error) and returns the panel. */
async function ended(page, ms, what) {
  await page.waitFor(ms, `const p = document.getElementById('gold-migrate');
    return !document.getElementById('gold-migrate-run').disabled && !p.hasAttribute('aria-busy')
      && (document.getElementById('gold-migrate-progress').dataset.state || p.querySelector('[role="alert"]'))`, what);
  return panel(page);
}

/**
 * Runs from the end of tracestore.mjs's check: `points` is how many points the table holds,
 * `traceRows` its trace rows (a trace's row per tile it has points in), `traces` the newest
 * tile's traces, `settled(page, what)` that view's wait for the grid.
 */
export async function check(page, { points, traceRows, traces, settled }) {
  await page.click('#gold-form button[data-op="migrate"]');
  await page.until(`const s = document.getElementById('gold-migrate-status');
    return !s.hasAttribute('aria-busy') && s.textContent`, 'the migration status');
  let p = await panel(page);
  assert(!p.hidden && p.status === 'table gold (md5); no migration in progress', `the status of gold: ${p.status}`);
  await page.axe('tracestore: the Migrate panel');

  // 1. A target nobody set up: one line naming the CLI command that makes it.
  await page.type('gold-migrate-target', MISSING);
  await page.click('#gold-migrate-run');
  p = await ended(page, 30_000, 'the refusal of a missing target');
  const setup = `rowkit gold setup --table ${MISSING} --layout digest-id`;
  assert(p.alert !== null && p.alert.includes(setup) && !p.alert.includes('\n') && p.state === null,
    `a missing target is refused in one line naming \`${setup}\`: ${JSON.stringify(p)}`);
  assert(p.states.length === 0, `nothing ran: ${p.states}`);
  await page.shot('tracestore-migrate-refused');
  await page.axe('tracestore: a refused migration');

  // 2. The target set up by the CLI, no gates: copy, verify, stop in `verifying`.
  await page.type('gold-migrate-target', TARGET);
  await page.click('#gold-migrate-run');
  p = await ended(page, 120_000, 'the run without gates');
  assert(p.alert === null, `the run without gates: ${p.alert}`);
  assert(p.state === 'verifying' && p.fig.state === 'verifying', `it stops in verifying: ${JSON.stringify(p)}`);
  assert(JSON.stringify(p.states) === JSON.stringify(['no migration → copying', 'copying → verifying']), `the state changes: ${p.states}`);
  // The verification reads each trace row in both tables and copies nothing.
  const num = (n) => n.toLocaleString('en');
  assert(p.fig.rows_scanned === num(2 * traceRows) && p.fig.copied === '0',
    `the last progress is the verification's: ${2 * traceRows} rows scanned, none copied: ${JSON.stringify(p.fig)}`);
  const head = 'table gold: verifying (2 passes, ';
  const tail = ` rows scanned, ${num(points)} copied, 0 deleted, 0 stragglers, 0 conflicts, 0 findings); run again with “switch” to switch`;
  assert(p.final.startsWith(head) && p.final.endsWith(tail), `the result line: every point copied once:\n${p.final}\n${head}…${tail}`);
  await page.until(`return document.getElementById('gold-migrate-status').textContent.includes('verifying since')`, 'the status again');
  p = await panel(page);
  assert(p.status.startsWith(`table gold (md5); migrating md5 → digest-id into ${TARGET}: verifying since `),
    `the status names the run in progress: ${p.status}`);
  await page.axe('tracestore: a migration in verifying');
  await page.shot('tracestore-migrate-verifying');

  // The grid still reads every trace (the source is the truth until the switch).
  await page.type('tile-index', '');
  await page.click('#tile-load');
  assert(await settled(page, 'the tile after the migration') === 'done', 'the tile after the migration');
  const shown = await page.js(`return Number(document.getElementById('view-tracestore').dataset.traces)`);
  assert(shown === traces, `the grid reads every trace while the migration is in verifying: ${shown} of ${traces}`);
}

/** From outside: the target holds the same newest tile as the source. */
export async function after(cli, newest) {
  const source = JSON.parse(await cli(['--json', 'gold', 'tile', String(newest)]));
  const target = JSON.parse(await cli(['--json', 'gold', '--table', TARGET, 'tile', String(newest)]));
  const digests = (tile) => JSON.stringify(tile.traces.map((t) => [t.id, t.digests]).sort());
  assert(digests(target) === digests(source), `${TARGET} holds the newest tile as gold does`);
}

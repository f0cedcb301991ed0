// Graph view, as a graph user uses it: a 49-triple graph (13 of them temporal) written with the
// CLI is drawn as SVG nodes and labelled edges with its table of triples beside it; the query
// builder shows the fields of each lookup; time bounds (--lower, --upper, --latest) narrow the
// temporal triples as the CLI's do; the drawing pans and zooms by keyboard and buttons; a node
// selected is in the URL; an unknown graph is an error and an empty one says so; bad input is
// refused next to its field; removing triples and deleting a graph are confirmed. after()
// compares what the screen showed with what the CLI reads back.
import { assert } from '../webdriver.mjs';
import { confirmWith, fieldError, hashState, mouse, setupCheck } from './forms.mjs';
import { offlineError } from './offline.mjs';

const TRIPLES = [
  '/u<joe> "parent_of"@[] /u<mary>',
  '/u<joe> "parent_of"@[] /u<peter>',
  '/u<mary> "parent_of"@[] /u<ann>',
  '/u<peter> "parent_of"@[] /u<tom>',
  '/u<peter> "parent_of"@[] /u<eve>',
  '/u<mary> "sibling_of"@[] /u<peter>',
  '/u<joe> "married_to"@[] /u<sue>',
  '/u<sue> "parent_of"@[] /u<mary>',
  '/u<sue> "parent_of"@[] /u<peter>',
  '/u<ann> "age"@[] "31"^^type:int64',
  '/u<tom> "age"@[] "12"^^type:int64',
  '/u<joe> "met"@[2001-05-04T10:00:00Z] /u<sue>',
  '/u<joe> "met"@[2003-01-02T09:30:00Z] /u<bob>',
  '/u<mary> "lived_in"@[2010-06-01T00:00:00Z] /city<paris>',
  '/u<mary> "lived_in"@[2015-09-01T00:00:00Z] /city<berlin>',
  '/u<peter> "lived_in"@[2012-03-01T00:00:00Z] /city<paris>',
  '/u<tom> "friend_of"@[] /u<eve>',
  '/u<eve> "friend_of"@[] /u<ann>',
  '/u<bob> "works_with"@[] /u<joe>',
  '/u<sue> "born_in"@[] /city<rome>',
  '/u<ann> "lived_in"@[2020-01-01T00:00:00Z] /city<berlin>',
  '/u<bob> "lives_in"@[] /city<rome>',
  '/u<joe> "age"@[] "67"^^type:int64',
  '/u<sue> "age"@[] "65"^^type:int64',
  '/u<mary> "age"@[] "40"^^type:int64',
  '/u<peter> "age"@[] "38"^^type:int64',
  '/u<eve> "age"@[] "9"^^type:int64',
  '/u<bob> "age"@[] "66"^^type:int64',
  '/u<mary> "married_to"@[] /u<lee>',
  '/u<lee> "parent_of"@[] /u<ann>',
  '/u<lee> "born_in"@[] /city<seoul>',
  '/u<lee> "lived_in"@[2008-02-01T00:00:00Z] /city<seoul>',
  '/u<lee> "lived_in"@[2011-07-15T00:00:00Z] /city<paris>',
  '/u<peter> "married_to"@[] /u<kim>',
  '/u<kim> "parent_of"@[] /u<tom>',
  '/u<kim> "parent_of"@[] /u<eve>',
  '/u<kim> "works_with"@[] /u<mary>',
  '/u<kim> "lived_in"@[2012-03-01T00:00:00Z] /city<paris>',
  '/u<tom> "attends"@[] /org<lycee>',
  '/u<eve> "attends"@[] /org<ecole>',
  '/org<lycee> "located_in"@[] /city<paris>',
  '/org<ecole> "located_in"@[] /city<paris>',
  '/u<ann> "studies_at"@[2019-09-01T00:00:00Z] /org<tu>',
  '/org<tu> "located_in"@[] /city<berlin>',
  '/u<bob> "met"@[2018-11-20T18:00:00Z] /u<kim>',
  '/u<sue> "met"@[2016-04-10T12:00:00Z] /u<lee>',
  '/city<paris> "twinned_with"@[] /city<rome>',
  '/city<berlin> "twinned_with"@[] /city<paris>',
  '/u<joe> "worked_at"@[1990-01-01T00:00:00Z] /org<tu>',
];
/** The distinct subjects and objects of TRIPLES. */
const NODES = new Set(TRIPLES.flatMap((t) => { const p = t.split(' '); return [p[0], p[2]]; }));
const ANCHORS = TRIPLES.map((t) => /@\[([^\]]+)\]/.exec(t)?.[1]).filter(Boolean);
const BOUNDS = { lower: '2010-01-01T00:00:00Z', upper: '2016-12-31T00:00:00Z' };

// What the screen showed (filled by check, compared by after with what the CLI reads).
const seen = {};

export async function populate(cli) {
  assert(TRIPLES.length === 49 && ANCHORS.length === 13, `49 triples, 13 temporal: ${TRIPLES.length}, ${ANCHORS.length}`);
  await cli(['graph', 'create', 'family']);
  await cli(['graph', 'add', 'family', ...TRIPLES]);
}

/** What the drawing and its table show. */
async function drawn(page) {
  return page.js(`const r = document.getElementById('graph-result');
    const svg = r.querySelector('svg');
    return { role: svg?.getAttribute('role') ?? null, title: svg?.querySelector('title')?.textContent ?? null,
      viewBox: svg?.getAttribute('viewBox') ?? null,
      nodes: [...r.querySelectorAll('svg g.node')].map((g) => g.dataset.name).sort(),
      edges: r.querySelectorAll('svg g.edge').length,
      temporal: [...r.querySelectorAll('svg g.edge.temporal .edge-label')].map((t) => t.textContent).sort(),
      labels: [...r.querySelectorAll('svg .edge-label')].map((t) => t.textContent),
      empty: r.querySelector('p.empty')?.textContent ?? null,
      head: [...r.querySelectorAll('table thead th')].map((th) => th.textContent),
      anchors: [...r.querySelectorAll('table tbody tr')].map((tr) => tr.cells[2].querySelector('time')?.getAttribute('datetime') ?? null),
      rows: [...r.querySelectorAll('table tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent)) };`);
}

/** Runs `act` (a query) and waits for its drawing or error; `alert`: an error is expected. */
async function queried(page, what, act, { alert: expectAlert = false } = {}) {
  await page.js(`for (const e of document.getElementById('graph-result').children) e.dataset.old = 'true'`);
  await act();
  await page.until(`const r = document.getElementById('graph-result');
    return !r.hasAttribute('aria-busy') && r.querySelector(':scope > :not([data-old])')`, what);
  const alert = await page.js(`return document.querySelector('#graph-result [role="alert"]')?.textContent ?? null`);
  if (expectAlert) {
    assert(alert !== null, `${what}: an error is shown`);
    return alert;
  }
  assert(alert === null, `${what}: ${alert}`);
  return drawn(page);
}

/** The argument fields the query builder shows. */
const fields = (page) => page.js(`return [...document.querySelectorAll('#graph-query-form .graph-args input')].map((i) => i.id)`);
const viewBox = (page) => page.js(`return document.querySelector('#graph-result svg').getAttribute('viewBox').split(' ').map(Number)`);

export async function check(page) {
  // Every triple (Enter in the graph field runs the query).
  await page.type('graph-id', 'family');
  let g = await queried(page, 'triples of family', () => page.keys('graph-id', '\uE007'));
  assert(JSON.stringify(g.nodes) === JSON.stringify([...NODES].sort()), `one node per subject and object: ${g.nodes}`);
  assert(g.edges === TRIPLES.length && g.labels.length === TRIPLES.length, `one labelled edge per triple: ${g.edges} edges, ${g.labels.length} labels`);
  assert(JSON.stringify(g.temporal) === JSON.stringify(TRIPLES.filter((t) => t.includes('@[2') || t.includes('@[1'))
    .map((t) => { const m = /"([^"]+)"@\[([^\]]+)\]/.exec(t); return `${m[1]} @ ${m[2]}`; }).sort()),
  `the temporal edges carry their anchors: ${g.temporal}`);
  assert(g.role === 'img' && g.title.startsWith(`triples() on graph family: ${NODES.size} nodes, 49 edges`), `the SVG's accessible name: ${g.role} ${g.title}`);
  assert(g.rows.length === TRIPLES.length && JSON.stringify(g.head) === '["Subject","Predicate","Anchor","Object"]',
    `the table of triples: ${g.head} ${g.rows.length} rows`);
  // Anchors in the table are dates a person reads, with the instant in datetime.
  assert(JSON.stringify(g.anchors.filter(Boolean).sort()) === JSON.stringify(ANCHORS.map((a) => new Date(a).toISOString()).sort()),
    `the anchors as <time>: ${g.anchors}`);
  seen.all = g.rows.length;
  await page.axe('graph: every triple');
  await page.shot('graph');

  // Pan and zoom by keyboard on the focused drawing, and by the buttons.
  assert(JSON.stringify(await viewBox(page)) === '[0,0,800,560]', 'the whole drawing first');
  await page.keys('graph-drawing', '+');
  let box = await viewBox(page);
  assert(box[2] === 640 && box[3] === 448, `+ zooms in around the centre: ${box}`);
  await page.keys('graph-drawing', '\uE014'); // ArrowRight
  const panned = await viewBox(page);
  assert(panned[0] === box[0] + 64 && panned[1] === box[1], `→ pans right by a tenth of the view: ${panned}`);
  await page.keys('graph-drawing', '-');
  box = await viewBox(page);
  assert(box[2] === 800, `- zooms out again: ${box}`);
  await page.click('#graph-result button[data-op="zoom-in"]');
  await page.click('#graph-result button[data-op="zoom-in"]');
  box = await viewBox(page);
  assert(Math.round(box[2]) === 512, `two Zoom in clicks: ${box}`);
  await page.click('#graph-result button[data-op="pan-down"]');
  assert((await viewBox(page))[1] > box[1], 'Pan down moves the view down');
  await page.shot('graph-zoomed');
  await page.click('#graph-result button[data-op="zoom-reset"]');
  assert(JSON.stringify(await viewBox(page)) === '[0,0,800,560]', 'Whole graph shows it all again');
  // The mouse: the wheel zooms around the pointer (the centre here), a drag pans.
  const m = await mouse(page, '#graph-drawing');
  await m.wheel(-100);
  box = await page.until(`const b = document.querySelector('#graph-result svg').getAttribute('viewBox').split(' ').map(Number);
    return b[2] < 800 && b`, 'the wheel to zoom in');
  assert(Math.round(box[2]) === 640 && Math.abs(box[0] + box[2] / 2 - 400) < 8, `a wheel turn zooms in around the pointer: ${box}`);
  await m.drag(100, 0);
  const dragged = await viewBox(page);
  assert(dragged[0] < box[0] - 20 && Math.abs(dragged[1] - box[1]) < 1, `dragging right moves the view left: ${box} → ${dragged}`);
  const stillNone = await page.js(`return document.querySelector('#graph-details h3')?.textContent ?? null`);
  assert(stillNone === null, `the end of a drag selects nothing: ${stillNone}`);
  await page.click('#graph-result button[data-op="zoom-reset"]');
  const focusable = await page.js(`return document.querySelector('#graph-result svg').tabIndex`);
  assert(focusable === 0, 'the drawing is reachable by keyboard (Tab)');

  // A node selected in the drawing: marked, its triples in the details, in the URL.
  await page.click('#graph-result svg g.node[data-name="/u<lee>"]');
  const details = await page.until(`return document.querySelector('#graph-details h3')?.textContent`, 'the node\'s details');
  assert(details === '/u<lee>', `lee selected: ${details}`);
  const detailText = await page.js(`return document.getElementById('graph-details').textContent`);
  assert(detailText.includes('4 triple(s) from it') && detailText.includes('2 triple(s) to it'), `lee's triples: ${detailText}`);
  let state = await hashState(page);
  assert(state.graph === 'family' && state.node === '/u<lee>', `graph and selection in the URL: ${JSON.stringify(state)}`);
  await page.axe('graph: a node selected');
  await page.shot('graph-selected');

  // The query builder: the fields of each method, chosen as a user does.
  assert(JSON.stringify(await fields(page)) === '[]', 'triples takes no argument');
  await page.select('#graph-method', 'triples-for-subject');
  assert(JSON.stringify(await fields(page)) === '["graph-subject"]', 'triples-for-subject takes a subject');
  await page.type('graph-subject', '/u<joe>');
  g = await queried(page, 'triples-for-subject joe', () => page.keys('graph-subject', '\uE007'));
  assert(g.edges === 7 && JSON.stringify(g.nodes) === JSON.stringify(['"67"^^type:int64', '/org<tu>', '/u<bob>', '/u<joe>', '/u<mary>', '/u<peter>', '/u<sue>']),
    `joe's seven triples: ${JSON.stringify(g.nodes)}`);
  const cleared = await page.js(`return document.getElementById('graph-details').textContent`);
  assert(cleared.startsWith('Select a node'), `a new query clears the selection: ${cleared}`);
  // The browser's Back shows the query before with its selected node (from the URL); Forward
  // this one again.
  g = await queried(page, 'back to every triple', () => page.back());
  assert(g.edges === 49, `Back: every triple again: ${g.edges}`);
  const back = await page.until(`return document.querySelector('#graph-details h3')?.textContent`, 'the selection from the URL');
  const marked = await page.js(`return document.querySelector('#graph-result svg g.node.selected')?.dataset.name`);
  assert(back === '/u<lee>' && marked === '/u<lee>', `Back restores the selected node: ${back} ${marked}`);
  g = await queried(page, 'forward to joe', () => page.forward());
  assert(g.edges === 7 && (await hashState(page)).subject === '/u<joe>', `Forward: joe's triples again: ${g.edges}`);
  await page.select('#graph-method', 'objects');
  assert(JSON.stringify(await fields(page)) === '["graph-subject","graph-predicate"]', 'objects takes a subject and a predicate');
  assert(await page.js(`return document.getElementById('graph-subject').value`) === '/u<joe>', 'the subject typed is kept');
  await page.type('graph-subject', '/u<mary>');
  await page.type('graph-predicate', '"lived_in"@[]');
  g = await queried(page, 'objects of mary lived_in', () => page.keys('graph-predicate', '\uE007'));
  assert(g.head.at(-1) === 'Result' && JSON.stringify(g.rows.map((r) => r[4]).sort()) === '["/city<berlin>","/city<paris>"]',
    `mary lived in two cities (the projected column): ${JSON.stringify(g.rows)}`);

  // Time bounds: lower and upper (inclusive), then the latest anchor only.
  await page.select('#graph-method', 'triples-for-predicate');
  await page.type('graph-predicate', '"lived_in"@[]');
  await page.type('graph-lower', BOUNDS.lower);
  await page.type('graph-upper', BOUNDS.upper);
  g = await queried(page, 'lived_in within the bounds', () => page.keys('graph-upper', '\uE007'));
  const inside = g.anchors.map((a) => a.replace('.000Z', 'Z')).sort();
  assert(inside.length > 0 && inside.every((a) => a >= BOUNDS.lower && a <= BOUNDS.upper), `every anchor within the bounds: ${inside}`);
  seen.bounded = inside;
  state = await hashState(page);
  assert(state.lower === BOUNDS.lower && state.upper === BOUNDS.upper && state.method === 'triples-for-predicate', `the bounds in the URL: ${JSON.stringify(state)}`);
  await page.axe('graph: time bounds');
  await page.shot('graph-bounds');
  await page.clear('graph-lower');
  await page.clear('graph-upper');
  await page.select('#graph-method', 'triples-for-subject');
  await page.type('graph-subject', '/u<mary>');
  await page.click('#graph-latest');
  g = await queried(page, 'mary\'s triples, latest anchors only', () => page.click('#graph-query-form button[data-op="query"]'));
  seen.latest = g.anchors.map((a) => a.replace('.000Z', 'Z')).sort();
  assert(JSON.stringify(seen.latest) === '["2015-09-01T00:00:00Z"]', `the latest anchor of mary's lived_in: ${seen.latest}`);
  await page.click('#graph-latest');
  // A bound that is not a time: refused next to its field.
  await page.type('graph-lower', 'yesterday');
  await queried(page, 'a bad lower bound', () => page.keys('graph-lower', '\uE007'), { alert: true });
  let [invalid, message] = await fieldError(page, 'graph-lower');
  assert(invalid === 'true' && /yesterday/.test(message), `the bad bound is shown next to its field: ${message}`);
  await page.axe('graph: a bad bound');
  await page.clear('graph-lower');

  // An unknown graph is an error, not "0 nodes, 0 edges"; an empty graph says it is empty.
  await page.select('#graph-method', 'triples');
  await page.type('graph-id', 'nosuch');
  const missing = await queried(page, 'an unknown graph', () => page.keys('graph-id', '\uE007'), { alert: true });
  assert(/nosuch/.test(missing) && /not exist|not found/i.test(missing), `an unknown graph is missing: ${missing}`);
  await page.axe('graph: unknown graph');
  await page.shot('graph-unknown');
  // Adding to it is refused too, and nothing is written.
  await page.type('graph-triples', '/u<a> "knows"@[] /u<b>');
  const refused = await page.outcome('graph-out', 'add to an unknown graph', () => page.click('#graph-edit-form button[data-op="add"]'));
  assert(refused.alert !== null && /nosuch/.test(refused.alert), `adding to an unknown graph is refused: ${refused.text}`);
  await page.type('graph-id', 'e2e');
  const created = await page.outcome('graph-out', 'create graph', () => page.click('#graph-edit-form button[data-op="create"]'));
  assert(created.alert === null && created.text === 'created graph e2e: ok', `create: ${created.text}`);
  g = await queried(page, 'an empty graph', () => page.keys('graph-id', '\uE007'));
  assert(g.empty === 'graph e2e is empty: it has no triples yet' && g.edges === 0, `an empty graph says so: ${g.empty}`);

  // Bad triple text: the parse error next to the field, nothing written.
  await page.type('graph-triples', '/u<joe> "parent_of"@[] /u<mary>\nnot a triple');
  await page.click('#graph-edit-form button[data-op="add"]');
  [invalid, message] = await page.until(`const e = document.getElementById('graph-triples-error');
    return e && [document.getElementById('graph-triples').getAttribute('aria-invalid'), e.textContent]`, 'the bad triple refused');
  assert(invalid === 'true' && message.includes('not a triple'), `the bad line is named next to the field: ${message}`);
  await page.axe('graph: a bad triple');
  await page.shot('graph-bad-triple');

  // A graph filled from the page: add (the query runs again), remove (confirmed), check.
  await page.type('graph-triples', '/u<joe> "parent_of"@[] /u<mary>\n/u<joe> "met"@[2001-05-04T10:00:00Z] /u<sue>\n/u<x> "knows"@[] /u<y>');
  g = await queried(page, 'add to e2e', () => page.click('#graph-edit-form button[data-op="add"]'));
  assert(g.edges === 3 && JSON.stringify(g.temporal) === '["met @ 2001-05-04T10:00:00Z"]', `e2e's three triples: ${JSON.stringify(g)}`);
  await page.type('graph-triples', '/u<x> "knows"@[] /u<y>');
  let dialog = await confirmWith(page, 'graph', '#graph-edit-form button[data-op="remove"]', 'confirm-cancel');
  assert(dialog.body.startsWith('Remove 1 triple(s) from graph e2e') && dialog.focused === 'confirm-cancel', `the remove is confirmed first: ${JSON.stringify(dialog)}`);
  dialog = await confirmWith(page, 'graph', '#graph-edit-form button[data-op="remove"]', 'confirm-ok');
  g = await page.until(`const r = document.getElementById('graph-result');
    return !r.hasAttribute('aria-busy') && r.querySelectorAll('svg g.edge').length === 2 && 2`, 'the drawing after the remove');
  const report = await page.outcome('graph-out', 'graph check', () => page.click('#graph-query-form button[data-op="check"]'));
  assert(/^SchemagraphRows scanned9Findingsnone.*Left0/.test(report.text), `graph check of e2e (its graph row, 2 × 4 index rows): ${report.text}`);

  // Delete a graph (confirmed): a throwaway one.
  await page.type('graph-id', 'scratch');
  await page.click('#graph-edit-form button[data-op="create"]');
  await page.until(`return document.getElementById('graph-out').textContent === 'created graph scratch: ok'`, 'scratch created');
  dialog = await confirmWith(page, 'graph', '#graph-edit-form button[data-op="drop"]', 'confirm-ok');
  assert(dialog.body === 'Delete graph scratch: the graph and every one of its triples.', `the drop names the graph: ${dialog.body}`);
  await page.until(`return document.getElementById('graph-out').textContent === 'deleted graph scratch: ok'`, 'scratch deleted');
  const names = await page.outcome('graph-out', 'graph names', () => page.click('#graph-query-form button[data-op="graphs"]'));
  const listed = names.text.replace(/^graphs: /, '').split(', ');
  assert(listed.includes('e2e') && listed.includes('family') && !listed.includes('scratch') && !listed.includes('nosuch'),
    `the graphs: e2e and family, not the deleted or the unknown one: ${names.text}`);
  await page.type('graph-id', 'family');
}

export async function offline(page) {
  await offlineError(page, { view: 'graph', button: '#graph-query-form button[data-op="query"]', out: 'graph-result' });
}

export async function setup(page) {
  await setupCheck(page, 'graph', { first: '#graph-query-form button[data-op="graphs"]', firstOut: 'graph-out',
    setup: '#graph-query-form button[data-op="setup"]', setupOut: 'graph-out', done: 'set up: ok', after: 'no graphs yet: Create graph makes one' });
}

export async function after(cli) {
  const graphs = JSON.parse(await cli(['--json', 'graph', 'list']));
  const list = JSON.stringify(graphs);
  assert(list.includes('"e2e"') && list.includes('"family"') && !list.includes('nosuch') && !list.includes('scratch'),
    `the graphs: e2e and family, not the unknown or the deleted one: ${list}`);
  const all = JSON.parse(await cli(['--json', 'graph', 'query', 'family', 'triples']));
  assert(all.length === seen.all, `family has the ${seen.all} triples the page drew: ${all.length}`);
  const anchorsOf = (found) => found.map((f) => /@\[([^\]]+)\]/.exec(f.predicate)?.[1]).filter(Boolean).sort();
  const bounded = JSON.parse(await cli(['--json', 'graph', 'query', 'family', 'triples-for-predicate', '"lived_in"@[]',
    '--lower', BOUNDS.lower, '--upper', BOUNDS.upper]));
  assert(JSON.stringify(anchorsOf(bounded)) === JSON.stringify(seen.bounded), `the bounded lookup as the CLI's: ${anchorsOf(bounded)} vs ${seen.bounded}`);
  const latest = JSON.parse(await cli(['--json', 'graph', 'query', 'family', 'triples-for-subject', '/u<mary>', '--latest']));
  assert(JSON.stringify(anchorsOf(latest)) === JSON.stringify(seen.latest), `--latest as the CLI's: ${anchorsOf(latest)} vs ${seen.latest}`);
  const e2e = JSON.parse(await cli(['--json', 'graph', 'query', 'e2e', 'triples'])).map((f) => f.triple).sort();
  assert(JSON.stringify(e2e) === JSON.stringify(['/u<joe>\t"met"@[2001-05-04T10:00:00Z]\t/u<sue>', '/u<joe>\t"parent_of"@[]\t/u<mary>']),
    `e2e holds what the page added and did not remove (no bad line written): ${JSON.stringify(e2e)}`);
}

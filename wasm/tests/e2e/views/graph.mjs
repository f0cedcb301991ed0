// Graph view: a graph of 22 triples (6 of them temporal) written with the CLI is drawn as SVG
// nodes and labelled edges with its table of triples beside it; the query builder shows the
// fields of each lookup; then a graph is created and filled from the page and checked.
import { assert } from '../webdriver.mjs';
import { dump } from './panel.mjs';

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
];
/** The distinct subjects and objects of TRIPLES. */
const NODES = new Set(TRIPLES.flatMap((t) => { const p = t.split(' '); return [p[0], p[2]]; }));

export async function populate(cli) {
  await cli(['graph', 'create', 'family']);
  await cli(['graph', 'add', 'family', ...TRIPLES]);
}

/** What the drawing and its table show. */
async function drawn(page) {
  return page.js(`const r = document.getElementById('graph-result');
    const svg = r.querySelector('svg');
    return { role: svg?.getAttribute('role') ?? null, title: svg?.querySelector('title')?.textContent ?? null,
      nodes: [...r.querySelectorAll('svg g.node')].map((g) => g.dataset.name).sort(),
      edges: r.querySelectorAll('svg g.edge').length,
      temporal: [...r.querySelectorAll('svg g.edge.temporal .edge-label')].map((t) => t.textContent).sort(),
      labels: [...r.querySelectorAll('svg .edge-label')].map((t) => t.textContent),
      head: [...r.querySelectorAll('table thead th')].map((th) => th.textContent),
      rows: [...r.querySelectorAll('table tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent)) };`);
}

/** Runs `act` (a query) and waits for its drawing or error. */
async function queried(page, what, act) {
  await page.js(`for (const e of document.getElementById('graph-result').children) e.dataset.old = 'true'`);
  await act();
  await page.until(`const r = document.getElementById('graph-result');
    return !r.hasAttribute('aria-busy') && r.querySelector(':scope > :not([data-old])')`, what);
  const alert = await page.js(`return document.querySelector('#graph-result [role="alert"]')?.textContent ?? null`);
  assert(alert === null, `${what}: ${alert}`);
  return drawn(page);
}

/** The argument fields the query builder shows. */
const fields = (page) => page.js(`return [...document.querySelectorAll('#graph-query-form .graph-args input')].map((i) => i.id)`);

async function chooseMethod(page, method) {
  await page.js(`const s = document.getElementById('graph-method'); s.value = arguments[0];
    s.dispatchEvent(new Event('change'));`, method);
}

export async function check(page) {
  // Every triple (Enter in the graph field runs the query).
  await page.type('graph-id', 'family');
  let g = await queried(page, 'triples of family', () => page.keys('graph-id', '\uE007'));
  assert(JSON.stringify(g.nodes) === JSON.stringify([...NODES].sort()), `one node per subject and object: ${g.nodes}`);
  assert(g.edges === TRIPLES.length && g.labels.length === TRIPLES.length, `one labelled edge per triple: ${g.edges} edges, ${g.labels.length} labels`);
  assert(JSON.stringify(g.temporal) === JSON.stringify([
    'lived_in @ 2010-06-01T00:00:00Z', 'lived_in @ 2012-03-01T00:00:00Z', 'lived_in @ 2015-09-01T00:00:00Z',
    'lived_in @ 2020-01-01T00:00:00Z', 'met @ 2001-05-04T10:00:00Z', 'met @ 2003-01-02T09:30:00Z']),
  `the temporal edges carry their anchors: ${g.temporal}`);
  assert(g.labels.filter((l) => l === 'parent_of').length === 7, `seven parent_of edges: ${g.labels}`);
  assert(g.role === 'img' && g.title.startsWith('triples() on graph family: 13 nodes, 22 edges'), `the SVG's accessible name: ${g.role} ${g.title}`);
  assert(g.rows.length === TRIPLES.length && JSON.stringify(g.head) === '["Subject","Predicate","Anchor","Object"]',
    `the table of triples: ${g.head} ${g.rows.length} rows`);
  assert(g.rows.some((r) => JSON.stringify(r) === JSON.stringify(['/u<joe>', 'met', '2003-01-02T09:30:00Z', '/u<bob>'])),
    `a temporal triple in the table: ${JSON.stringify(g.rows)}`);
  await page.shot('graph');

  // The query builder: the fields of each method.
  assert(JSON.stringify(await fields(page)) === '[]', 'triples takes no argument');
  await chooseMethod(page, 'triples-for-subject');
  assert(JSON.stringify(await fields(page)) === '["graph-subject"]', 'triples-for-subject takes a subject');
  await page.type('graph-subject', '/u<joe>');
  g = await queried(page, 'triples-for-subject joe', () => page.keys('graph-subject', '\uE007'));
  assert(g.edges === 5 && JSON.stringify(g.nodes) === JSON.stringify(['/u<bob>', '/u<joe>', '/u<mary>', '/u<peter>', '/u<sue>']),
    `joe's five triples: ${JSON.stringify(g)}`);
  await chooseMethod(page, 'objects');
  assert(JSON.stringify(await fields(page)) === '["graph-subject","graph-predicate"]', 'objects takes a subject and a predicate');
  assert(await page.js(`return document.getElementById('graph-subject').value`) === '/u<joe>', 'the subject typed is kept');
  await page.type('graph-subject', '/u<mary>');
  await page.type('graph-predicate', '"lived_in"@[]');
  g = await queried(page, 'objects of mary lived_in', () => page.keys('graph-predicate', '\uE007'));
  assert(g.head.at(-1) === 'Result' && JSON.stringify(g.rows.map((r) => r[4]).sort()) === '["/city<berlin>","/city<paris>"]',
    `mary lived in two cities (the projected column): ${JSON.stringify(g.rows)}`);
  await chooseMethod(page, 'subjects');
  assert(JSON.stringify(await fields(page)) === '["graph-predicate","graph-object"]', 'subjects takes a predicate and an object');

  // A graph made in the page: create, add (the query runs again), check.
  await page.type('graph-id', 'e2e');
  const created = await page.outcome('graph-out', 'create graph', () => page.click('#graph-edit-form button[data-op="create"]'));
  assert(created.alert === null && created.text === 'created graph e2e: ok', `create: ${created.text}`);
  await chooseMethod(page, 'triples');
  await page.type('graph-triples', '/u<joe> "parent_of"@[] /u<mary>\n/u<joe> "met"@[2001-05-04T10:00:00Z] /u<sue>');
  g = await queried(page, 'add to e2e', () => page.click('#graph-edit-form button[data-op="add"]'));
  assert(g.edges === 2 && JSON.stringify(g.temporal) === '["met @ 2001-05-04T10:00:00Z"]', `e2e's two triples: ${JSON.stringify(g)}`);
  const report = await page.outcome('graph-out', 'graph check', () => page.click('#graph-query-form button[data-op="check"]'));
  assert(/^SchemagraphRows scanned9Findingsnone.*Left0/.test(report.text), `graph check of e2e (its graph row, 2 × 4 index rows): ${report.text}`);
  const names = await page.outcome('graph-out', 'graph names', () => page.click('#graph-query-form button[data-op="graphs"]'));
  assert(names.text.includes('family') && names.text.includes('e2e'), `the graphs: ${names.text}`);
}

export async function after(cli) {
  const cells = await dump(cli, 'badwolf');
  assert(cells.filter((c) => c.row_key.startsWith('e2e:')).length === 8, 'badwolf has e2e\'s eight index rows');
  assert(cells.some((c) => c.row_key === 'graph:e2e'), 'badwolf has the graph row');
}

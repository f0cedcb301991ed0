// The triple store as a graph: a query built field by field (every lookup method, with the
// arguments it takes), its result drawn as nodes and labelled edges in SVG (temporal
// predicates with their time anchor on the edge), and beside it the same triples as a table,
// the drawing's text alternative. The layout is deterministic: nodes start on a circle in
// sorted order and a force-directed pass runs a fixed number of steps.
import { cachedClient, checkReport, el, field, svg, table, uniqueId } from './dom.js';

export const title = 'Graph';

const WIDTH = 800;
const HEIGHT = 560;
const RADIUS = 16;
/** More nodes than this are listed in the table but not drawn (the layout is quadratic). */
const MAX_DRAWN = 400;

const ARGUMENT_LABELS = {
  subject: ['Subject', 'a node, e.g. /u<joe>'],
  predicate: ['Predicate', 'e.g. "parent_of"@[] or "met"@[2006-01-02T15:04:05Z]'],
  object: ['Object', 'a node, predicate or literal, e.g. "3"^^type:int64'],
};

/**
 * The graph of `found` (the query's results): its nodes (subjects and objects, by text, sorted),
 * the kind of each (`node`, `predicate`, `literal`) and its edges (one per triple, `{from, to,
 * label, anchor}`).
 */
export function graphOf(found) {
  const kinds = new Map();
  const edges = [];
  const seen = new Set();
  for (const f of found) {
    // A projection may repeat a triple (no deduplication in the lookups): draw it once.
    if (seen.has(f.triple)) continue;
    seen.add(f.triple);
    kinds.set(f.subject, 'node');
    if (!kinds.has(f.object)) kinds.set(f.object, f.objectKind);
    edges.push({ from: f.subject, to: f.object, label: f.predicateId, anchor: f.anchor });
  }
  return { nodes: [...kinds.keys()].sort(), kinds, edges };
}

/** Positions `{x, y}` for `nodes` (Fruchterman–Reingold from a circle, fixed steps). */
export function layout(nodes, edges, width = WIDTH, height = HEIGHT) {
  const n = nodes.length;
  const index = new Map(nodes.map((name, i) => [name, i]));
  const cx = width / 2;
  const cy = height / 2;
  const pos = nodes.map((_, i) => ({
    x: cx + (Math.min(width, height) / 2 - 40) * Math.cos((2 * Math.PI * i) / Math.max(n, 1)),
    y: cy + (Math.min(width, height) / 2 - 40) * Math.sin((2 * Math.PI * i) / Math.max(n, 1)),
  }));
  if (n < 3) return pos;
  const k = Math.sqrt((width * height) / n) * 0.6;
  const steps = 300;
  for (let step = 0; step < steps; step++) {
    const temperature = (width / 10) * (1 - step / steps);
    const disp = pos.map(() => ({ x: 0, y: 0 }));
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        let dx = pos[i].x - pos[j].x;
        let dy = pos[i].y - pos[j].y;
        const d = Math.max(Math.hypot(dx, dy), 0.01);
        const f = (k * k) / d;
        dx /= d; dy /= d;
        disp[i].x += dx * f; disp[i].y += dy * f;
        disp[j].x -= dx * f; disp[j].y -= dy * f;
      }
    }
    for (const e of edges) {
      const a = index.get(e.from);
      const b = index.get(e.to);
      if (a === b) continue;
      let dx = pos[a].x - pos[b].x;
      let dy = pos[a].y - pos[b].y;
      const d = Math.max(Math.hypot(dx, dy), 0.01);
      const f = (d * d) / k;
      dx /= d; dy /= d;
      disp[a].x -= dx * f; disp[a].y -= dy * f;
      disp[b].x += dx * f; disp[b].y += dy * f;
    }
    for (let i = 0; i < n; i++) {
      // A weak pull to the centre keeps parts that are not connected in view.
      disp[i].x += (cx - pos[i].x) * 0.05 * k / 100;
      disp[i].y += (cy - pos[i].y) * 0.05 * k / 100;
      const d = Math.max(Math.hypot(disp[i].x, disp[i].y), 0.01);
      const m = Math.min(d, temperature);
      pos[i].x = Math.min(width - 60, Math.max(60, pos[i].x + (disp[i].x / d) * m));
      pos[i].y = Math.min(height - 30, Math.max(30, pos[i].y + (disp[i].y / d) * m));
    }
  }
  return pos;
}

/** A node's short label: the id of `/type<id>`, a literal's value, a predicate's id. */
function shortLabel(text) {
  const node = /^\/[^<]*<(.*)>$/s.exec(text);
  if (node) return node[1];
  const quoted = /^"((?:[^"\\]|\\.)*)"/.exec(text);
  return quoted ? quoted[1] : text;
}

/** The SVG drawing of `graph` with `caption` as its accessible name. */
export function draw(graph, caption) {
  const { nodes, edges } = graph;
  const pos = layout(nodes, edges);
  const at = new Map(nodes.map((name, i) => [name, pos[i]]));
  const titleId = uniqueId('graph-title');
  const descId = uniqueId('graph-desc');
  const markerId = uniqueId('arrow');
  // Parallel edges between one pair bend apart: the i-th of a pair gets its own offset.
  const pairCount = new Map();
  const edgeEls = edges.map((e) => {
    const a = at.get(e.from);
    const b = at.get(e.to);
    const pair = [e.from, e.to].sort().join('\u0000');
    const nth = pairCount.get(pair) ?? 0;
    pairCount.set(pair, nth + 1);
    const label = e.anchor ? `${e.label} @ ${e.anchor}` : e.label;
    let d;
    let mid;
    if (e.from === e.to) {
      const r = 26 + nth * 10;
      d = `M ${a.x} ${a.y - RADIUS} C ${a.x - r * 2} ${a.y - r * 3}, ${a.x + r * 2} ${a.y - r * 3}, ${a.x} ${a.y - RADIUS}`;
      mid = { x: a.x, y: a.y - r * 2.3 };
    } else {
      const dx = b.x - a.x;
      const dy = b.y - a.y;
      const len = Math.max(Math.hypot(dx, dy), 1);
      const bend = (nth % 2 ? -1 : 1) * Math.ceil(nth / 2) * 36 * (e.from < e.to ? 1 : -1);
      const c = { x: (a.x + b.x) / 2 - (dy / len) * bend, y: (a.y + b.y) / 2 + (dx / len) * bend };
      // End at the circle's edge so that the arrow head shows.
      const ex = b.x - c.x;
      const ey = b.y - c.y;
      const el2 = Math.max(Math.hypot(ex, ey), 1);
      const end = { x: b.x - (ex / el2) * (RADIUS + 2), y: b.y - (ey / el2) * (RADIUS + 2) };
      d = `M ${a.x} ${a.y} Q ${c.x} ${c.y} ${end.x} ${end.y}`;
      mid = { x: 0.25 * a.x + 0.5 * c.x + 0.25 * b.x, y: 0.25 * a.y + 0.5 * c.y + 0.25 * b.y };
    }
    return svg('g', { class: e.anchor ? 'edge temporal' : 'edge', dataset: { from: e.from, to: e.to } },
      svg('title', null, `${e.from} ${label} ${e.to}`),
      svg('path', { d, 'marker-end': `url(#${markerId})` }),
      svg('text', { class: 'edge-label', x: mid.x, y: mid.y - 4, 'text-anchor': 'middle' }, label));
  });
  const nodeEls = nodes.map((name) => {
    const p = at.get(name);
    const kind = graph.kinds.get(name);
    const literal = kind === 'literal';
    return svg('g', { class: `node ${kind}`, dataset: { name }, transform: `translate(${p.x} ${p.y})` },
      svg('title', null, name),
      literal
        ? svg('rect', { x: -RADIUS, y: -RADIUS * 0.7, width: RADIUS * 2, height: RADIUS * 1.4, rx: 4 })
        : svg('circle', { r: RADIUS }),
      svg('text', { class: 'node-label', y: RADIUS + 13, 'text-anchor': 'middle' }, shortLabel(name)));
  });
  return svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-labelledby': `${titleId} ${descId}`, class: 'graph-svg' },
    svg('title', { id: titleId }, caption),
    svg('desc', { id: descId }, `${nodes.length} nodes and ${edges.length} edges; the table of triples next to the drawing lists them as text.`),
    svg('defs', null, svg('marker', { id: markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }))),
    svg('g', { class: 'edges' }, edgeEls),
    svg('g', { class: 'nodes' }, nodeEls));
}

export function mount(section, ctx) {
  section.classList.add('view-graph');
  const methods = ctx.rowkit.lookupMethods();
  const graphNames = el('datalist', { id: uniqueId('graphs') });
  const graphId = el('input', { id: 'graph-id', name: 'graph', size: 12, value: 'demo', required: true, list: graphNames.id });
  const client = cachedClient(() => ({ ...ctx.options(), graph: graphId.value }),
    ({ graph, ...o }) => new ctx.rowkit.Graph(graph, o));
  const out = el('div', { id: 'graph-out', class: 'out', 'aria-live': 'polite' });
  const result = el('div', { id: 'graph-result', class: 'graph-result', 'aria-live': 'polite' });

  // --- the query builder: one field per argument of the chosen method -------------------------
  const method = el('select', { id: 'graph-method', name: 'method' }, methods.map((m) => el('option', { value: m.method }, m.method)));
  method.value = 'triples';
  const argFields = el('div', { class: 'graph-args' });
  let argInputs = [];
  const kept = {}; // what was typed per argument kind, kept across method changes
  function showArguments() {
    const m = methods.find((x) => x.method === method.value);
    argInputs = m.arguments.map((kind) => {
      const [label, hint] = ARGUMENT_LABELS[kind];
      const input = el('input', { id: `graph-${kind}`, name: kind, size: 30, placeholder: hint, value: kept[kind] ?? '', required: true,
        oninput: () => { kept[kind] = input.value; } });
      return input;
    });
    argFields.replaceChildren(...(argInputs.length
      ? argInputs.map((input) => field(ARGUMENT_LABELS[input.name][0], input))
      : [el('span', { class: 'help' }, 'every triple of the graph')]));
  }
  method.addEventListener('change', showArguments);
  showArguments();

  async function query() {
    try {
      const found = await ctx.busy(result, client().query(method.value, argInputs.map((i) => i.value.trim())));
      render(found);
    } catch (e) {
      ctx.fail(result, e);
    }
  }

  function render(found) {
    const graph = graphOf(found);
    const args = argInputs.map((i) => i.value.trim()).join(', ');
    const caption = `${method.value}(${args}) on graph ${graphId.value}: ${graph.nodes.length} nodes, ${graph.edges.length} edges`;
    const projected = method.value !== 'triples' && !method.value.startsWith('triples-');
    const rows = found.map((f) => [
      el('code', null, f.subject), el('code', null, f.predicateId), f.anchor ?? '', el('code', null, f.object),
      ...(projected ? [el('code', null, f.item)] : [])]);
    const text = table(`${found.length} result(s): the triples of the drawing`,
      ['Subject', 'Predicate', 'Anchor', 'Object', ...(projected ? ['Result'] : [])], rows);
    text.classList.add('graph-table');
    result.classList.remove('error');
    result.replaceChildren(
      el('div', { class: 'graph-panes' },
        graph.nodes.length > MAX_DRAWN
          ? el('p', null, `${graph.nodes.length} nodes: too many to draw; the table lists them.`)
          : el('figure', null, draw(graph, caption), el('figcaption', null, caption)),
        text));
  }

  async function run(what, op, after) {
    try {
      const r = await ctx.busy(out, op(client()));
      out.classList.remove('error');
      out.replaceChildren(what === 'check' ? checkReport(r) : `${what}: ok`);
      if (after) await after();
    } catch (e) {
      ctx.fail(out, e);
    }
  }

  async function listGraphs() {
    try {
      const names = await ctx.busy(out, ctx.rowkit.Graph.names(ctx.options()));
      graphNames.replaceChildren(...names.map((n) => el('option', { value: n })));
      out.classList.remove('error');
      out.replaceChildren(`graphs: ${names.join(', ') || '(none)'}`);
    } catch (e) {
      ctx.fail(out, e);
    }
  }

  const queryForm = el('form', { id: 'graph-query-form', 'aria-label': 'Query' },
    field('Graph', graphId), graphNames, field('Lookup', method), argFields,
    el('button', { dataset: { op: 'query' } }, 'Query'),
    el('button', { type: 'button', dataset: { op: 'graphs' }, onclick: listGraphs }, 'Graphs'),
    el('button', { type: 'button', dataset: { op: 'check' }, onclick: () => run('check', (g) => g.check(false)) }, 'Check'),
    el('button', { type: 'button', dataset: { op: 'setup' }, onclick: () => run('set up', (g) => g.setup()) }, 'Set up'));
  queryForm.addEventListener('submit', (ev) => { ev.preventDefault(); query(); });

  const triples = el('textarea', { id: 'graph-triples', name: 'triples', rows: 3, cols: 60,
    placeholder: '/u<joe>\t"parent_of"@[]\t/u<mary>' }, '/u<joe> "parent_of"@[] /u<mary>');
  const lines = () => triples.value.split('\n').map((s) => s.trim()).filter(Boolean);
  const editForm = el('form', { id: 'graph-edit-form', 'aria-label': 'Triples' },
    field('Triples (one per line)', triples),
    el('button', { dataset: { op: 'add' } }, 'Add triples'),
    el('button', { type: 'button', dataset: { op: 'remove' }, onclick: () => run('removed', (g) => g.remove(lines()), query) }, 'Remove triples'),
    el('button', { type: 'button', dataset: { op: 'create' }, onclick: () => run(`created graph ${graphId.value}`, (g) => g.create()) }, 'Create graph'));
  editForm.addEventListener('submit', (ev) => { ev.preventDefault(); run(`added ${lines().length} triple(s)`, (g) => g.add(lines()), query); });

  section.append(el('h2', null, title), queryForm, editForm, out, result);
}

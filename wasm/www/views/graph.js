// The triple store as a graph: a query built field by field (every lookup method, with the
// arguments it takes), its result drawn as nodes and labelled edges in SVG (temporal
// predicates with their time anchor on the edge), and beside it the same triples as a table,
// the drawing's text alternative. The layout is deterministic: nodes start on a circle in
// sorted order and a force-directed pass runs a fixed number of steps. The drawing pans and
// zooms (wheel, drag, +/−/arrow keys when focused, buttons); lookups take the CLI's time
// bounds; the graph, query and selected node are the URL's state
// (`#graph?graph=…&method=…&subject=…&lower=…&node=…`).
import { cachedClient, checkReport, el, field, formatTime, markInvalid, svg, table, uniqueId } from './dom.js';

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

/** The SVG drawing of `graph` with `caption` as its accessible name; `selected` is marked. */
export function draw(graph, caption, selected = null) {
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
    return svg('g', { class: `node ${kind}${name === selected ? ' selected' : ''}`, dataset: { name }, transform: `translate(${p.x} ${p.y})` },
      svg('title', null, name),
      literal
        ? svg('rect', { x: -RADIUS, y: -RADIUS * 0.7, width: RADIUS * 2, height: RADIUS * 1.4, rx: 4 })
        : svg('circle', { r: RADIUS }),
      svg('text', { class: 'node-label', y: RADIUS + 13, 'text-anchor': 'middle' }, shortLabel(name)));
  });
  return svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-labelledby': `${titleId} ${descId}`, class: 'graph-svg',
    tabindex: 0 },
    svg('title', { id: titleId }, caption),
    svg('desc', { id: descId }, `${nodes.length} nodes and ${edges.length} edges; the table of triples next to the drawing lists them as text. `
      + 'Plus and minus zoom, the arrow keys pan, 0 shows it whole.'),
    svg('defs', null, svg('marker', { id: markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }))),
    svg('g', { class: 'edges' }, edgeEls),
    svg('g', { class: 'nodes' }, nodeEls));
}


/** How far the drawing zooms: its scale stays within these (1 = the whole drawing). */
const MIN_SCALE = 0.5;
const MAX_SCALE = 8;
/** One zoom step (a key, a button, a wheel notch) and one pan step (a share of the view). */
const ZOOM_STEP = 1.25;
const PAN_STEP = 0.1;

/**
 * Pan and zoom for `drawing` (an SVG with a `viewBox`): the mouse wheel zooms around the pointer,
 * dragging pans, and when the drawing has focus `+`/`-` zoom, the arrow keys pan and `0` shows
 * it whole. Returns the toolbar of buttons doing the same. `onclick(target)` receives clicks
 * that were not the end of a drag.
 */
export function panZoom(drawing, onclick) {
  let box = { x: 0, y: 0, w: WIDTH, h: HEIGHT };
  const apply = () => {
    drawing.setAttribute('viewBox', `${box.x} ${box.y} ${box.w} ${box.h}`);
    drawing.dataset.scale = (WIDTH / box.w).toFixed(3);
  };
  // Zooms by `factor` keeping the drawing's point (cx, cy) where it is on screen.
  const zoom = (factor, cx = box.x + box.w / 2, cy = box.y + box.h / 2) => {
    const scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, (WIDTH / box.w) * factor));
    const w = WIDTH / scale;
    const h = HEIGHT / scale;
    box = { x: cx - ((cx - box.x) * w) / box.w, y: cy - ((cy - box.y) * h) / box.h, w, h };
    apply();
  };
  const pan = (dx, dy) => {
    box = { ...box, x: box.x + dx * box.w, y: box.y + dy * box.h };
    apply();
  };
  const reset = () => {
    box = { x: 0, y: 0, w: WIDTH, h: HEIGHT };
    apply();
  };
  // A screen point as a point of the drawing.
  const toDrawing = (clientX, clientY) => {
    const r = drawing.getBoundingClientRect();
    return { x: box.x + ((clientX - r.left) / r.width) * box.w, y: box.y + ((clientY - r.top) / r.height) * box.h };
  };
  drawing.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const p = toDrawing(ev.clientX, ev.clientY);
    zoom(ev.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP, p.x, p.y);
  }, { passive: false });
  let drag = null;
  drawing.addEventListener('pointerdown', (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, box, moved: false };
  });
  drawing.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    const r = drawing.getBoundingClientRect();
    const dx = ev.clientX - drag.x;
    const dy = ev.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) drawing.setPointerCapture?.(ev.pointerId);
    drag.moved = true;
    box = { ...drag.box, x: drag.box.x - (dx / r.width) * drag.box.w, y: drag.box.y - (dy / r.height) * drag.box.h };
    apply();
  });
  const endDrag = () => {
    // The click that ends a drag is not a selection.
    if (drag?.moved) drawing.addEventListener('click', (ev) => ev.stopPropagation(), { capture: true, once: true });
    drag = null;
  };
  drawing.addEventListener('pointerup', endDrag);
  drawing.addEventListener('pointercancel', () => { drag = null; });
  drawing.addEventListener('click', (ev) => onclick?.(ev.target));
  const keys = {
    '+': () => zoom(ZOOM_STEP), '=': () => zoom(ZOOM_STEP), '-': () => zoom(1 / ZOOM_STEP), '−': () => zoom(1 / ZOOM_STEP),
    ArrowLeft: () => pan(-PAN_STEP, 0), ArrowRight: () => pan(PAN_STEP, 0),
    ArrowUp: () => pan(0, -PAN_STEP), ArrowDown: () => pan(0, PAN_STEP), 0: reset,
  };
  drawing.addEventListener('keydown', (ev) => {
    const act = keys[ev.key];
    if (!act || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    ev.preventDefault();
    act();
  });
  apply();
  const button = (op, text, label, act) => el('button', { type: 'button', dataset: { op }, 'aria-label': label, onclick: act }, text);
  return el('div', { class: 'graph-tools', role: 'toolbar', 'aria-label': 'Drawing' },
    button('zoom-in', '+', 'Zoom in', () => zoom(ZOOM_STEP)),
    button('zoom-out', '−', 'Zoom out', () => zoom(1 / ZOOM_STEP)),
    button('pan-left', '←', 'Pan left', () => pan(-PAN_STEP, 0)),
    button('pan-up', '↑', 'Pan up', () => pan(0, -PAN_STEP)),
    button('pan-down', '↓', 'Pan down', () => pan(0, PAN_STEP)),
    button('pan-right', '→', 'Pan right', () => pan(PAN_STEP, 0)),
    button('zoom-reset', 'Whole graph', 'Show the whole graph', reset));
}

/** Each mounted view's `restore`, by its section (the shell calls the module's `restore`). */
const restorers = new WeakMap();

/** Shows the state `params` (the URL's query) in the view mounted in `section`. */
export function restore(params, section) {
  return restorers.get(section)?.(params);
}

export function mount(section, ctx) {
  section.classList.add('view-graph');
  const methods = ctx.rowkit.lookupMethods();
  const graphNames = el('datalist', { id: uniqueId('graphs') });
  const graphId = el('input', { id: 'graph-id', name: 'graph', size: 12, value: 'demo', required: true, list: graphNames.id,
    oninput: () => markInvalid(graphId, null) });
  const client = cachedClient(() => ({ ...ctx.options(), graph: graphId.value }),
    ({ graph, ...o }) => new ctx.rowkit.Graph(graph, o));
  const out = el('div', { id: 'graph-out', class: 'out', 'aria-live': 'polite' });
  const result = el('div', { id: 'graph-result', class: 'graph-result', 'aria-live': 'polite' });
  const details = el('div', { id: 'graph-details', class: 'graph-details', 'aria-live': 'polite' });

  /** The shared validator's message for `value` as `what` (`null`: fine, or no validator). */
  const rule = (what, value) => ctx.rowkit.validate?.(what, value) ?? null;

  /** Whether the graph id passes the rules (a refusal is shown by the field). */
  function graphOk() {
    const message = graphId.value ? rule('graph', graphId.value) : 'a graph id is required';
    markInvalid(graphId, message);
    return !message;
  }

  // --- the query builder: one field per argument of the chosen method -------------------------
  const method = el('select', { id: 'graph-method', name: 'method' }, methods.map((m) => el('option', { value: m.method }, m.method)));
  method.value = 'triples';
  const argFields = el('div', { class: 'graph-args' });
  let argInputs = [];
  const kept = {}; // what was typed per argument kind, kept across method changes
  function showArguments() {
    const m = methods.find((x) => x.method === method.value);
    argInputs = m.arguments.map((kind) => {
      const [, hint] = ARGUMENT_LABELS[kind];
      const input = el('input', { id: `graph-${kind}`, name: kind, size: 30, placeholder: hint, value: kept[kind] ?? '', required: true,
        oninput: () => { kept[kind] = input.value; markInvalid(input, null); } });
      return input;
    });
    argFields.replaceChildren(...(argInputs.length
      ? argInputs.map((input) => field(ARGUMENT_LABELS[input.name][0], input))
      : [el('span', { class: 'help' }, 'every triple of the graph')]));
  }
  method.addEventListener('change', showArguments);
  showArguments();

  // The time bounds of temporal triples (the CLI's --lower, --upper, --latest).
  const lower = el('input', { id: 'graph-lower', name: 'lower', size: 22, placeholder: '2006-01-02T15:04:05Z',
    oninput: () => markInvalid(lower, null) });
  const upper = el('input', { id: 'graph-upper', name: 'upper', size: 22, placeholder: '2006-01-02T15:04:05Z',
    oninput: () => markInvalid(upper, null) });
  const latest = el('input', { id: 'graph-latest', name: 'latest', type: 'checkbox' });
  const bounds = () => ({ lower: lower.value.trim() || undefined, upper: upper.value.trim() || undefined, latest: latest.checked });
  const boundsSet = el('fieldset', { class: 'graph-bounds' }, el('legend', null, 'Time bounds of temporal triples'),
    field('From (inclusive)', lower), field('To (inclusive)', upper), el('label', null, latest, ' latest anchor only'));

  let shown = null; // the result on screen: { found, graph, caption }
  let selectedNode = null;

  /** The URL's state: the graph, the query and the selected node. */
  function saveState(push) {
    const p = new URLSearchParams({ graph: graphId.value, method: method.value });
    for (const i of argInputs) if (i.value.trim()) p.set(i.name, i.value.trim());
    const b = bounds();
    if (b.lower) p.set('lower', b.lower);
    if (b.upper) p.set('upper', b.upper);
    if (b.latest) p.set('latest', '1');
    if (selectedNode) p.set('node', selectedNode);
    ctx.setState?.(p, { push });
  }

  /** Marks the field an `invalid_argument` error is about (a bound, an argument, the triples). */
  function blame(e, fields) {
    if (e?.code !== 'invalid_argument') return false;
    const message = ctx.describe ? ctx.describe(e) : e.message;
    const hit = fields.find(([pattern]) => pattern.test(e.message ?? ''));
    if (!hit) return false;
    markInvalid(hit[1], message);
    return true;
  }

  async function query({ push = true, keepNode = false } = {}) {
    if (!graphOk()) return;
    for (const i of argInputs) markInvalid(i, i.value.trim() ? null : `${ARGUMENT_LABELS[i.name][0]} is required`);
    if (argInputs.some((i) => !i.value.trim())) return;
    if (!keepNode) selectedNode = null;
    saveState(push);
    try {
      const found = await ctx.busy(result, client().query(method.value, argInputs.map((i) => i.value.trim()), bounds()));
      render(found);
    } catch (e) {
      shown = null;
      showNode(null);
      ctx.fail(result, e);
      if (e?.code === 'not_found') markInvalid(graphId, `no graph named ${graphId.value}`);
      blame(e, [[/^lower/, lower], [/^upper/, upper], ...argInputs.map((i) => [new RegExp(i.name, 'i'), i])]);
    }
  }

  function render(found) {
    const graph = graphOf(found);
    const args = argInputs.map((i) => i.value.trim()).join(', ');
    const caption = `${method.value}(${args}) on graph ${graphId.value}: ${graph.nodes.length} nodes, ${graph.edges.length} edges`;
    shown = { found, graph, caption };
    if (selectedNode && !graph.kinds.has(selectedNode)) selectedNode = null;
    result.classList.remove('error');
    if (found.length === 0) {
      const b = bounds();
      const unbounded = method.value === 'triples' && !b.lower && !b.upper && !b.latest;
      result.replaceChildren(el('p', { class: 'empty' }, unbounded
        ? `graph ${graphId.value} is empty: it has no triples yet`
        : `no triples of graph ${graphId.value} match ${method.value}(${args})`));
      showNode(null);
      return;
    }
    const projected = method.value !== 'triples' && !method.value.startsWith('triples-');
    const nodeButton = (name) => el('button', { type: 'button', class: 'link node-pick', dataset: { name },
      'aria-pressed': name === selectedNode ? 'true' : 'false', onclick: () => pick(name) }, el('code', null, name));
    const rows = found.map((f) => [
      nodeButton(f.subject), el('code', null, f.predicateId), f.anchor ? formatTime(f.anchor) : '', nodeButton(f.object),
      ...(projected ? [el('code', null, f.item)] : [])]);
    const text = table(`${found.length} result(s): the triples of the drawing`,
      ['Subject', 'Predicate', 'Anchor', 'Object', ...(projected ? ['Result'] : [])], rows);
    text.classList.add('graph-table');
    let figure;
    if (graph.nodes.length > MAX_DRAWN) {
      figure = el('p', null, `${graph.nodes.length} nodes: too many to draw; the table lists them.`);
    } else {
      const drawing = draw(graph, caption, selectedNode);
      drawing.id = 'graph-drawing';
      const tools = panZoom(drawing, (target) => {
        const node = target.closest?.('g.node');
        if (node) pick(node.dataset.name);
      });
      figure = el('figure', null, tools, drawing, el('figcaption', null, caption));
    }
    result.replaceChildren(el('div', { class: 'graph-panes' }, figure,
      el('div', { class: 'graph-table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Triples of the drawing' }, text)));
    showNode(selectedNode);
  }

  /** Selects node `name` (again: unselects it): marked in the drawing and the table, in the URL. */
  function pick(name) {
    selectedNode = selectedNode === name ? null : name;
    for (const g of result.querySelectorAll('svg g.node')) g.classList.toggle('selected', g.dataset.name === selectedNode);
    for (const b of result.querySelectorAll('button.node-pick')) b.setAttribute('aria-pressed', String(b.dataset.name === selectedNode));
    saveState(false);
    showNode(selectedNode);
  }

  /** The details pane: the selected node's triples, out and in, or the hint. */
  function showNode(name) {
    if (!name || !shown) {
      details.replaceChildren(el('p', { class: 'help' }, 'Select a node (in the drawing or the table) to see its triples.'));
      return;
    }
    const triple = (f) => `${f.subject} ${f.predicateId}${f.anchor ? ` @ ${f.anchor}` : ''} ${f.object}`;
    const outgoing = shown.found.filter((f) => f.subject === name);
    const incoming = shown.found.filter((f) => f.object === name);
    const list = (items) => (items.length ? el('ul', null, items.map((f) => el('li', null, el('code', null, triple(f))))) : el('p', null, 'none'));
    details.replaceChildren(el('h3', null, el('code', null, name)),
      el('h4', null, `${outgoing.length} triple(s) from it`), list(outgoing),
      el('h4', null, `${incoming.length} triple(s) to it`), list(incoming));
  }

  async function run(what, op, after) {
    try {
      const r = await ctx.busy(out, op(client()));
      out.classList.remove('error');
      out.replaceChildren(what === 'check' ? checkReport(r) : `${what}: ok`);
      if (after) await after();
      return true;
    } catch (e) {
      ctx.fail(out, e);
      if (e?.code === 'not_found') markInvalid(graphId, `no graph named ${graphId.value}`);
      blame(e, [[/./, triples]]);
      return false;
    }
  }

  async function listGraphs() {
    try {
      const names = await ctx.busy(out, ctx.rowkit.Graph.names(ctx.options()));
      graphNames.replaceChildren(...names.map((n) => el('option', { value: n })));
      out.classList.remove('error');
      out.replaceChildren(names.length ? `graphs: ${names.join(', ')}` : 'no graphs yet: Create graph makes one');
    } catch (e) {
      ctx.fail(out, e);
    }
  }

  const queryForm = el('form', { id: 'graph-query-form', 'aria-label': 'Query', novalidate: true },
    field('Graph', graphId), graphNames, field('Lookup', method), argFields, boundsSet,
    el('button', { dataset: { op: 'query' } }, 'Query'),
    el('button', { type: 'button', dataset: { op: 'graphs' }, onclick: listGraphs }, 'Graphs'),
    el('button', { type: 'button', dataset: { op: 'check' }, onclick: () => graphOk() && run('check', (g) => g.check(false)) }, 'Check'),
    el('button', { type: 'button', dataset: { op: 'setup' }, onclick: () => run('set up', (g) => g.setup()) }, 'Set up'));
  queryForm.addEventListener('submit', (ev) => { ev.preventDefault(); query(); });

  const triples = el('textarea', { id: 'graph-triples', name: 'triples', rows: 3, cols: 60,
    placeholder: '/u<joe>\t"parent_of"@[]\t/u<mary>', oninput: () => markInvalid(triples, null) },
  '/u<joe> "parent_of"@[] /u<mary>');
  const lines = () => triples.value.split('\n').map((s) => s.trim()).filter(Boolean);

  /** The triples typed if each parses (the shared validator's rule), else the first refusal shown. */
  function typedTriples() {
    const list = lines();
    const bad = list.length === 0 ? 'no triple: type one per line'
      : list.map((t) => [t, rule('triple', t)]).filter(([, m]) => m).map(([t, m]) => `${t}: ${m}`)[0] ?? null;
    markInvalid(triples, bad);
    return bad || !graphOk() ? null : list;
  }

  async function removeTriples() {
    const list = typedTriples();
    if (!list) return;
    const name = graphId.value;
    const ok = await ctx.confirm({ title: `Remove ${list.length} triple(s)?`,
      body: `Remove ${list.length} triple(s) from graph ${name}: ${list.slice(0, 5).join('; ')}${list.length > 5 ? '; …' : ''}`, confirm: 'Remove' });
    if (ok) await run(`removed ${list.length} triple(s)`, (g) => g.remove(list), () => query({ keepNode: true }));
  }

  async function dropGraph() {
    if (!graphOk()) return;
    const name = graphId.value;
    const ok = await ctx.confirm({ title: `Delete graph ${name}?`,
      body: `Delete graph ${name}: the graph and every one of its triples.`, confirm: 'Delete graph' });
    if (!ok) return;
    if (await run(`deleted graph ${name}`, (g) => g.drop())) {
      shown = null;
      selectedNode = null;
      result.replaceChildren();
      showNode(null);
    }
  }

  const editForm = el('form', { id: 'graph-edit-form', 'aria-label': 'Triples', novalidate: true },
    field('Triples (one per line)', triples),
    el('button', { dataset: { op: 'add' } }, 'Add triples'),
    el('button', { type: 'button', class: 'danger', dataset: { op: 'remove' }, onclick: removeTriples }, 'Remove triples'),
    el('button', { type: 'button', dataset: { op: 'create' }, onclick: () => graphOk() && run(`created graph ${graphId.value}`, (g) => g.create()) }, 'Create graph'),
    el('button', { type: 'button', class: 'danger', dataset: { op: 'drop' }, onclick: dropGraph }, 'Delete graph'));
  editForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const list = typedTriples();
    if (list) run(`added ${list.length} triple(s)`, (g) => g.add(list), () => query({ keepNode: true }));
  });

  section.append(el('h2', null, title), queryForm, editForm, out,
    el('div', { class: 'graph-view-panes' }, result, details));
  showNode(null);

  restorers.set(section, async (p) => {
    if (!p.get('graph')) return;
    graphId.value = p.get('graph');
    if (methods.some((m) => m.method === p.get('method'))) method.value = p.get('method');
    for (const kind of Object.keys(ARGUMENT_LABELS)) kept[kind] = p.get(kind) ?? kept[kind] ?? '';
    showArguments();
    lower.value = p.get('lower') ?? '';
    upper.value = p.get('upper') ?? '';
    latest.checked = p.get('latest') === '1';
    selectedNode = p.get('node');
    await query({ push: false, keepNode: true });
  });
}

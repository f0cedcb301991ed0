// Trace store: a tile as a grid, rows = traces (grouped and filtered by params), columns = the
// tile's 256 commits, each cell coloured by its digest, missing points marked. The tile streams
// in from the wasm side (TraceStore.streamTile: batches of traces as the 32 shard scans
// deliver them) and is drawn on a <canvas> with virtual scrolling: only the rows in view are
// painted, so a 10 000 × 256 tile stays responsive. Hover, click or the arrow keys show a
// cell's trace id, params, commit and digest in a details panel (real DOM, announced).
// Below the grid, today's operations: put a digest, check the table, set it up.
import { el, field } from './dom.js';
import { panel, wire } from './panel.js';

export const title = 'Trace store';

const COMMITS = 256;
const CELL_W = 3;
const ROW_H = 9;
const LABEL_W = 220;
const HEAD_H = 18;

const colours = new Map();

/**
 * A digest's colour: hue, saturation and lightness from an FNV-1a hash of the whole digest, so
 * it is stable across tiles and sessions and digests sharing a prefix still differ.
 */
export function digestColour(digest) {
  let colour = colours.get(digest);
  if (colour) return colour;
  let h = 0x811c9dc5;
  for (let i = 0; i < digest.length; i++) h = Math.imul(h ^ digest.charCodeAt(i), 0x01000193) >>> 0;
  colour = `hsl(${h % 360} ${50 + (h >>> 9) % 35}% ${38 + (h >>> 16) % 27}%)`;
  colours.set(digest, colour);
  return colour;
}

/** `k=v,k2=v2` as [[k, v], …]; an entry without `=` matches a key with any value. */
function parseFilter(text) {
  return text.split(',').map((p) => p.trim()).filter(Boolean).map((p) => {
    const at = p.indexOf('=');
    return at < 0 ? [p, null] : [p.slice(0, at).trim(), p.slice(at + 1).trim()];
  });
}

/** The tile as it streams in: traces, their cells (digest numbers, 0 = missing), digests. */
class TileData {
  constructor(index) {
    this.index = index;
    this.traces = [];
    this.digests = [];
    this.cells = new Uint32Array(COMMITS * 1024);
    this.shardsDone = 0;
    this.missing = 0;
  }

  add(batch) {
    // Loops, not push(...a): a spread of a large batch exceeds the engine's argument limit.
    for (const d of batch.newDigests) this.digests.push(d);
    const need = (this.traces.length + batch.traces.length) * COMMITS;
    if (need > this.cells.length) {
      const grown = new Uint32Array(Math.max(need, this.cells.length * 2));
      grown.set(this.cells);
      this.cells = grown;
    }
    this.cells.set(batch.cells, this.traces.length * COMMITS);
    for (const c of batch.cells) if (c === 0) this.missing += 1;
    for (const t of batch.traces) this.traces.push(t);
    this.shardsDone = batch.shardsDone;
  }

  /** The digest of trace `t` at commit column `c`, '' when missing. */
  digest(t, c) {
    const n = this.cells[t * COMMITS + c];
    return n ? this.digests[n - 1] : '';
  }

  /** The param keys of the traces so far, sorted. */
  keys() {
    const keys = new Set();
    for (const t of this.traces) for (const k of Object.keys(t.params)) keys.add(k);
    return [...keys].sort();
  }
}

/**
 * The rows to draw: the traces passing `filter`, sorted by the `group` param's value then by
 * id, with a heading row before each group. Each row is {trace: index} or {group: value, count}.
 */
function layoutRows(tile, filter, group) {
  const keep = tile.traces.map((t, i) => i).filter((i) => {
    const p = tile.traces[i].params;
    return filter.every(([k, v]) => (v === null ? k in p : p[k] === v));
  });
  const value = (i) => (group ? tile.traces[i].params[group] ?? '(none)' : '');
  const order = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  keep.sort((a, b) => order(value(a), value(b)) || order(tile.traces[a].id, tile.traces[b].id));
  if (!group) return { rows: keep.map((trace) => ({ trace })), shown: keep.length };
  const rows = [];
  let current = null;
  for (const i of keep) {
    const v = value(i);
    if (v !== current) {
      current = v;
      rows.push({ group: v, count: 0 });
    }
    rows.push({ trace: i });
  }
  // Count each group's traces for its heading.
  let head = null;
  for (const r of rows) {
    if (r.group !== undefined) head = r;
    else head.count += 1;
  }
  return { rows, shown: keep.length };
}

export function mount(section, ctx) {
  const index = el('input', { id: 'tile-index', name: 'index', type: 'number', min: 0, placeholder: 'newest', size: 8 });
  const filter = el('input', { id: 'tile-filter', name: 'filter', size: 28, placeholder: 'k=v,k2=v2' });
  const group = el('select', { id: 'tile-group', name: 'group' }, el('option', { value: '' }, '(no grouping)'));
  const load = el('button', { id: 'tile-load' }, 'Show tile');
  const form = el('form', { id: 'tile-form' },
    field('Tile index', index), field('Filter by params', filter), field('Group by', group), load);
  const progress = el('progress', { id: 'tile-progress', max: 32, value: 0, hidden: true, 'aria-label': 'Shards read' });
  const status = el('p', { id: 'tile-status', role: 'status' }, 'No tile shown yet.');
  const canvas = el('canvas', { id: 'tile-canvas', tabindex: 0, role: 'img', 'aria-label': 'Trace grid (empty)' });
  const spacer = el('div', { class: 'grid-spacer' });
  const scroller = el('div', { id: 'tile-scroll', class: 'grid-scroll' }, canvas, spacer);
  const details = el('div', { id: 'tile-details', class: 'grid-details', 'aria-live': 'polite' },
    el('p', null, 'Hover over or click a cell (or focus the grid and use the arrow keys) to see its trace.'));
  const legend = el('p', { class: 'grid-legend' },
    el('span', { class: 'swatch missing', 'aria-hidden': 'true' }), ' missing point · other colours: one per digest');
  section.append(el('h2', null, title), form, el('div', { class: 'grid-status' }, progress, status),
    el('div', { class: 'grid-wrap' }, scroller, details), legend);

  let tile = null;
  let view = { rows: [], shown: 0 };
  let selected = null; // { row, col }
  let hovered = null;
  let drawQueued = false;
  let layoutStale = false; // rows to lay out again (new traces, filter or grouping) at the next frame
  let timing = ''; // how long the shown tile took, once read
  let started = 0; // when the shown tile was asked for (performance.now())
  let run = 0; // the stream whose batches are drawn (a new Show tile supersedes the last)

  const width = LABEL_W + COMMITS * CELL_W;
  canvas.width = width * devicePixelRatio;
  canvas.style.width = `${width}px`;

  /** Lays the rows out again at the next frame (once however many batches came meanwhile). */
  function relayout() {
    layoutStale = true;
    queueDraw();
  }

  function queueDraw() {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => {
      drawQueued = false;
      draw();
    });
  }

  /** Paints the rows in view only: the canvas is as tall as the scroller and stays in place. */
  function draw() {
    if (layoutStale && tile) {
      layoutStale = false;
      view = layoutRows(tile, parseFilter(filter.value), group.value);
      spacer.style.height = `${HEAD_H + view.rows.length * ROW_H}px`;
      describe();
    }
    // The first frame with rows on it: the time to first rows.
    if (tile && view.rows.length && !section.dataset.firstRowsMs) {
      section.dataset.firstRowsMs = String(Math.round(performance.now() - started));
    }
    const h = scroller.clientHeight;
    if (canvas.height !== Math.round(h * devicePixelRatio)) {
      canvas.height = Math.round(h * devicePixelRatio);
      canvas.style.height = `${h}px`;
      // The spacer gives the scroll height; it starts under the (sticky) canvas.
      spacer.style.marginTop = `-${h}px`;
    }
    const g = canvas.getContext('2d');
    g.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
    g.clearRect(0, 0, width, h);
    if (!tile) return;
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_H));
    const last = Math.min(view.rows.length, first + Math.ceil((h - HEAD_H) / ROW_H) + 1);
    g.font = `${ROW_H - 1}px ui-monospace, monospace`;
    g.textBaseline = 'middle';
    for (let r = first; r < last; r++) {
      const y = HEAD_H + (r - first) * ROW_H - (top % ROW_H);
      const row = view.rows[r];
      if (row.group !== undefined) {
        g.fillStyle = '#dde6f3';
        g.fillRect(0, y, width, ROW_H);
        g.fillStyle = '#123';
        g.fillText(`${group.value} = ${row.group} (${row.count})`, 2, y + ROW_H / 2);
        continue;
      }
      const t = row.trace;
      g.fillStyle = r % 2 ? '#fafafa' : '#fff';
      g.fillRect(0, y, LABEL_W, ROW_H);
      g.fillStyle = '#333';
      g.fillText(tile.traces[t].id.slice(0, 48), 2, y + ROW_H / 2, LABEL_W - 4);
      const base = t * COMMITS;
      for (let c = 0; c < COMMITS; c++) {
        const n = tile.cells[base + c];
        const x = LABEL_W + c * CELL_W;
        if (n === 0) {
          // A missing point: a pale cell with a dark dot, unlike any digest's colour.
          g.fillStyle = '#f1f1f1';
          g.fillRect(x, y, CELL_W, ROW_H);
          g.fillStyle = '#b0b0b0';
          g.fillRect(x + 1, y + 4, 1, 1);
        } else {
          g.fillStyle = digestColour(tile.digests[n - 1]);
          g.fillRect(x, y, CELL_W, ROW_H - 1);
        }
      }
    }
    // Column heading: repo indices every 32 commits, drawn over the rows.
    g.fillStyle = '#fff';
    g.fillRect(0, 0, width, HEAD_H);
    g.fillStyle = '#333';
    g.fillText('trace id', 2, HEAD_H / 2);
    for (let c = 0; c < COMMITS; c += 32) {
      g.fillRect(LABEL_W + c * CELL_W, HEAD_H - 4, 1, 4);
      g.fillText(String(tile.index * COMMITS + c), LABEL_W + c * CELL_W + 2, HEAD_H / 2);
    }
    for (const [mark, colour] of [[hovered, '#000'], [selected, '#d00']]) {
      if (!mark || mark.row < first || mark.row >= last) continue;
      g.strokeStyle = colour;
      g.lineWidth = 1.5;
      const y = HEAD_H + (mark.row - first) * ROW_H - (top % ROW_H);
      g.strokeRect(LABEL_W + mark.col * CELL_W - 1, y - 1, CELL_W + 2, ROW_H + 1);
    }
  }

  /** The row and column under a point of the canvas, or null. */
  function cellAt(ev) {
    const box = canvas.getBoundingClientRect();
    const x = ev.clientX - box.left;
    const y = ev.clientY - box.top;
    if (x < LABEL_W || y < HEAD_H) return null;
    const row = Math.floor((y - HEAD_H + scroller.scrollTop) / ROW_H);
    const col = Math.floor((x - LABEL_W) / CELL_W);
    if (row >= view.rows.length || col >= COMMITS || view.rows[row].group !== undefined) return null;
    return { row, col };
  }

  /** Shows a cell's trace in the details panel. */
  function showDetails(cell) {
    if (!cell) return;
    const t = view.rows[cell.row].trace;
    const trace = tile.traces[t];
    const digest = tile.digest(t, cell.col);
    const commit = tile.index * COMMITS + cell.col;
    details.replaceChildren(
      el('h3', null, 'Trace'),
      el('p', { class: 'k', id: 'tile-detail-id' }, trace.id),
      el('dl', null,
        el('dt', null, 'Commit'), el('dd', { id: 'tile-detail-commit' }, String(commit)),
        el('dt', null, 'Digest'), el('dd', { id: 'tile-detail-digest', class: 'k' },
          digest ? [el('span', { class: 'swatch', style: `background: ${digestColour(digest)}`, 'aria-hidden': 'true' }), ` ${digest}`]
            : 'missing (no digest at this commit)')),
      el('table', { class: 'params' }, el('caption', null, 'Params'), el('tbody', null,
        Object.entries(trace.params).map(([k, v]) => el('tr', null, el('th', { scope: 'row' }, k), el('td', null, v))))));
  }

  canvas.addEventListener('mousemove', (ev) => {
    const cell = cellAt(ev);
    if (!cell) return;
    hovered = cell;
    showDetails(cell);
    queueDraw();
  });
  canvas.addEventListener('mouseleave', () => {
    hovered = null;
    if (selected) showDetails(selected);
    queueDraw();
  });
  canvas.addEventListener('click', (ev) => {
    selected = cellAt(ev) ?? selected;
    showDetails(selected);
    queueDraw();
  });
  // Arrow keys move the selected cell (PageUp/PageDown by a screen); the view follows it.
  canvas.addEventListener('keydown', (ev) => {
    if (!tile || !view.rows.length) return;
    const page = Math.floor((scroller.clientHeight - HEAD_H) / ROW_H);
    const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1], PageUp: [-page, 0], PageDown: [page, 0] }[ev.key];
    if (!step) return;
    ev.preventDefault();
    const at = selected ?? { row: -1, col: 0 };
    let row = Math.min(view.rows.length - 1, Math.max(0, at.row + step[0]));
    const dir = step[0] < 0 ? -1 : 1;
    while (view.rows[row]?.group !== undefined) row += dir;
    if (!view.rows[row]) return;
    selected = { row, col: Math.min(COMMITS - 1, Math.max(0, at.col + step[1])) };
    const y = selected.row * ROW_H;
    if (y < scroller.scrollTop) scroller.scrollTop = y;
    else if (y + ROW_H > scroller.scrollTop + scroller.clientHeight - HEAD_H) scroller.scrollTop = y + ROW_H + HEAD_H - scroller.clientHeight;
    showDetails(selected);
    queueDraw();
  });
  scroller.addEventListener('scroll', queueDraw);
  filter.addEventListener('input', () => { selected = null; relayout(); });
  group.addEventListener('change', () => { selected = null; relayout(); });

  /** The status line and the canvas's text alternative. */
  function describe() {
    if (!tile) return;
    const n = tile.traces.length;
    const done = tile.shardsDone === 32;
    const text = `Tile ${tile.index} (commits ${tile.index * COMMITS}–${tile.index * COMMITS + 255}): `
      + `${n} trace(s)${done ? '' : ` so far, ${tile.shardsDone} of 32 shards read`}`
      + `${view.shown !== n ? `, ${view.shown} shown by the filter` : ''}; `
      + `${tile.missing} missing point(s), ${tile.digests.length} distinct digest(s)${timing}.`;
    status.textContent = text;
    canvas.setAttribute('aria-label', `Trace grid: ${text} Focus it and use the arrow keys to read cells.`);
    section.dataset.traces = String(n);
    section.dataset.rows = String(view.shown);
  }

  async function show() {
    const mine = ++run;
    const gold = new ctx.rowkit.TraceStore(ctx.options());
    started = performance.now();
    section.dataset.state = 'loading';
    delete section.dataset.firstRowsMs;
    delete section.dataset.wholeMs;
    let wanted = index.value === '' ? await gold.newestTile() : Number(index.value);
    if (wanted === null) {
      tile = null;
      status.textContent = 'The table has no tile yet: put a digest first.';
      section.dataset.state = 'empty';
      queueDraw();
      return;
    }
    wanted = Math.trunc(wanted);
    tile = new TileData(wanted);
    timing = '';
    selected = null;
    hovered = null;
    progress.hidden = false;
    progress.value = 0;
    status.textContent = `Reading tile ${wanted}…`;
    await gold.streamTile(wanted, (batch) => {
      if (mine !== run) throw new Error('superseded by a newer Show tile');
      tile.add(batch);
      progress.value = batch.shardsDone;
      relayout();
    });
    const keys = tile.keys();
    const kept = group.value;
    group.replaceChildren(el('option', { value: '' }, '(no grouping)'), keys.map((k) => el('option', { value: k }, k)));
    group.value = keys.includes(kept) ? kept : '';
    progress.hidden = true;
    relayout();
    // Done once the whole tile is laid out and drawn: the frame the relayout asked for runs first.
    requestAnimationFrame(() => {
      section.dataset.wholeMs = String(Math.round(performance.now() - started));
      const first = section.dataset.firstRowsMs ?? section.dataset.wholeMs;
      timing = `; shown in ${(Number(section.dataset.wholeMs) / 1000).toFixed(2)} s (first rows after ${(Number(first) / 1000).toFixed(2)} s)`;
      describe();
      section.dataset.state = 'done';
    });
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.busy(section, show()).catch((e) => {
      if (String(e?.message).startsWith('superseded')) return;
      progress.hidden = true;
      section.dataset.state = 'failed';
      ctx.fail(status, e);
    });
  });
  window.addEventListener('resize', queueDraw);

  // Today's operations on the table, below the grid.
  const ops = el('section', { class: 'gold-ops', 'aria-label': 'Trace store operations' });
  section.append(ops);
  panel(ops, `
  <h3>Write and check</h3>
  <form id="gold-form" class="panel">
    <label>Commit <input id="gold-commit" name="commit" type="number" value="1000" size="8"></label>
    <label>Params <input id="gold-params" name="params" value="name=circle,os=linux" size="24"></label>
    <label>Digest <input id="gold-digest" name="digest" value="8db9913366b07bd14df9a68459e2958b" size="40"></label>
    <button data-op="put">Put</button>
    <button data-op="check">Check</button>
    <button type="button" data-op="setup">Set up</button>
  </form>
  <pre id="gold-out" class="out" aria-live="polite"></pre>`);
  const $ = (id) => ops.querySelector(`#${id}`);
  const gold = () => new ctx.rowkit.TraceStore(ctx.options());
  const params = () => Object.fromEntries($('gold-params').value.split(',').filter(Boolean).map((p) => p.split('=')));
  wire($('gold-form'), $('gold-out'), {
    setup: () => gold().setup(),
    put: () => gold().put(Number($('gold-commit').value), [{ params: params(), digest: $('gold-digest').value }]),
    // The table's check (spec/check.md): findings by kind, and each finding with its row.
    check: () => gold().check(),
  }, ctx);
}

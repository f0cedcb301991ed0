// Trace store: a tile as a grid, rows = traces (grouped and filtered by params), columns = the
// tile's 256 commits, each cell coloured by its digest, missing points marked. The tile streams
// in from the wasm side (TraceStore.streamTile: batches of traces as the 32 shard scans
// deliver them) and is drawn on a <canvas> with virtual scrolling: only the rows in view are
// painted, so a 10 000 × 256 tile stays responsive. The grid is as wide as its container
// (cells narrow to 2 px, then the region scrolls sideways). Hover, click or the arrow keys (in
// the grid's scroll region, a Tab stop) show a cell's trace, params, commit and digest in a
// details panel; a pinned trace is compared with the selected one. Filters take Gold's query
// syntax (`config=gles|vk,os=linux`), with the tile's values offered as the user types. The
// tile, filter, grouping and selection are the URL's state (reload and back restore them).
// Below the grid, today's operations: put a digest (checked as typed), check the table, set it up;
// and Migrate: the table copied live into a table of the other layout (`rowkit gold migrate`,
// docs/migration.md §5; views/migrate.js shows it).
import { el, field, checkReport, scrollRegion, validatedField } from './dom.js';
import { migrateForm, migrationProgress, tabOwner } from './migrate.js';

export const title = 'Trace store';

const COMMITS = 256;
const ROW_H = 16;
const HEAD_H = 20;
const FONT = '12px ui-monospace, monospace';
/** The narrowest cell: below it the region scrolls sideways instead. */
const MIN_CELL_W = 2;
const MAX_CELL_W = 4;
/** The label column's width range: at 12 px about 25 to 50 characters of a trace id. */
const MIN_LABEL_W = 180;
const MAX_LABEL_W = 360;
/** The tile of the largest commit (a repo index is an int32, 2147483647). */
const MAX_TILE = Math.floor(2147483647 / COMMITS);

/** What the details panel says while no cell is selected. */
const HINT = 'Hover over or click a cell (or Tab to the grid and use the arrow keys) to see its trace.';

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

/**
 * A filter in Gold's query syntax, `k=v,k2=v2|v3,k3`, as [[k, values | null], …]: every entry
 * must hold; `|` separates the values a key may have (any one of them); an entry without `=`
 * matches a key with any value.
 */
export function parseFilter(text) {
  return text.split(',').map((p) => p.trim()).filter(Boolean).map((p) => {
    const at = p.indexOf('=');
    if (at < 0) return [p, null];
    return [p.slice(0, at).trim(), p.slice(at + 1).split('|').map((v) => v.trim()).filter(Boolean)];
  });
}

/** Whether `params` pass a parsed filter. */
function passes(params, filter) {
  return filter.every(([k, values]) => (values === null ? k in params : values.includes(params[k])));
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
    this.readAt = new Date();
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

  /** Every param key with its values over the traces so far, keys and values sorted. */
  paramset() {
    const set = new Map();
    for (const t of this.traces) {
      for (const [k, v] of Object.entries(t.params)) {
        if (!set.has(k)) set.set(k, new Set());
        set.get(k).add(v);
      }
    }
    return new Map([...set.keys()].sort().map((k) => [k, [...set.get(k)].sort()]));
  }

  /** What the tile holds at commit column `c`: traces with a digest, distinct digests. */
  commitSummary(c) {
    let present = 0;
    const distinct = new Set();
    for (let t = 0; t < this.traces.length; t++) {
      const n = this.cells[t * COMMITS + c];
      if (n) {
        present += 1;
        distinct.add(n);
      }
    }
    return { present, distinct: distinct.size };
  }
}

/**
 * The rows to draw: the traces passing `filter`, sorted by the `group` param's value then by
 * id, with a heading row before each group. Each row is {trace: index} or {group: value, count};
 * `rowOf` maps a trace index to its row.
 */
function layoutRows(tile, filter, group) {
  const keep = tile.traces.map((t, i) => i).filter((i) => passes(tile.traces[i].params, filter));
  const value = (i) => (group ? tile.traces[i].params[group] ?? '(none)' : '');
  const order = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  keep.sort((a, b) => order(value(a), value(b)) || order(tile.traces[a].id, tile.traces[b].id));
  const rows = [];
  let head = null;
  for (const i of keep) {
    if (group && (head === null || head.group !== value(i))) {
      head = { group: value(i), count: 0 };
      rows.push(head);
    }
    if (head) head.count += 1;
    rows.push({ trace: i });
  }
  const rowOf = new Map();
  rows.forEach((r, at) => { if (r.trace !== undefined) rowOf.set(r.trace, at); });
  return { rows, shown: keep.length, rowOf };
}

/**
 * The suggestions for a filter being typed: the text before the entry being typed, followed by
 * each key (no `=` yet) or each value of its key (after `=` or `|`) that starts as typed.
 */
function suggestions(text, paramset) {
  const cut = text.lastIndexOf(',') + 1;
  const before = text.slice(0, cut);
  const entry = text.slice(cut).trimStart();
  const at = entry.indexOf('=');
  if (at < 0) {
    return [...paramset.keys()].filter((k) => k.startsWith(entry)).map((k) => `${before}${k}=`);
  }
  const key = entry.slice(0, at);
  const bar = entry.lastIndexOf('|');
  const chosen = entry.slice(0, Math.max(bar, at) + 1);
  const typed = entry.slice(Math.max(bar, at) + 1);
  return (paramset.get(key) ?? []).filter((v) => v.startsWith(typed)).map((v) => `${before}${chosen}${v}`);
}

/** The mounted view's `restore`, by section (the shell calls the module's `restore`). */
const restorers = new WeakMap();

/** Shows the state of the URL (`tile`, `filter`, `group`, `trace`, `commit`, `compare`). */
export function restore(params, section) {
  restorers.get(section)?.(params);
}

export function mount(section, ctx) {
  const index = el('input', { id: 'tile-index', name: 'index', type: 'number', min: 0, placeholder: 'newest', size: 8 });
  const filterValues = el('datalist', { id: 'tile-filter-values' });
  const filter = el('input', { id: 'tile-filter', name: 'filter', size: 32, placeholder: 'config=gles|vk,os=linux',
    list: 'tile-filter-values', autocomplete: 'off', 'aria-describedby': 'tile-filter-help' });
  const group = el('select', { id: 'tile-group', name: 'group' }, el('option', { value: '' }, '(no grouping)'));
  const load = el('button', { id: 'tile-load' }, 'Show tile');
  const indexCheck = validatedField(ctx.rowkit, 'Tile index', index, null,
    (v) => (v.trim() === '' || (/^\d+$/.test(v.trim()) && Number(v) <= MAX_TILE) ? null
      : `a tile index is a whole number from 0 to ${MAX_TILE} (empty: the newest tile)`));
  // novalidate: the fields are checked by the view (with messages), not by the browser's bubbles.
  const form = el('form', { id: 'tile-form', 'aria-label': 'Tile', novalidate: true },
    indexCheck.label, field('Filter by params', filter), filterValues, field('Group by', group), load,
    el('span', { id: 'tile-filter-help', class: 'help' },
      'filter: key=value, key=v1|v2 (either value), key (any value); entries separated by commas must all hold'));
  const progress = el('progress', { id: 'tile-progress', max: 32, value: 0, hidden: true, 'aria-label': 'Shards read' });
  const status = el('div', { id: 'tile-status', role: 'status' }, 'No tile shown yet.');
  const stale = el('p', { id: 'tile-stale', class: 'stale-notice', hidden: true });
  const canvas = el('canvas', { id: 'tile-canvas', role: 'img', 'aria-label': 'Trace grid (empty)' });
  const spacer = el('div', { class: 'grid-spacer' });
  const scroller = scrollRegion(el('div', { id: 'tile-scroll', class: 'grid-scroll' }, canvas, spacer),
    'Trace grid: arrow keys move the selected cell, Page Up and Page Down by a screen');
  const details = el('div', { id: 'tile-details', class: 'grid-details', 'aria-live': 'polite' },
    el('p', null, HINT));
  const legend = el('p', { class: 'grid-legend' },
    el('span', { class: 'swatch missing', 'aria-hidden': 'true' }), ' missing point · ',
    el('span', { class: 'swatch pinned', 'aria-hidden': 'true' }), ' the trace pinned for comparison · other colours: one per digest');
  section.append(el('h2', null, title), form, el('div', { class: 'grid-status' }, progress, status), stale,
    el('div', { class: 'grid-wrap' }, scroller, details), legend);

  let tile = null;
  let paramset = new Map();
  let view = { rows: [], shown: 0, rowOf: new Map() };
  let selected = null; // { trace, col }: a trace index and a commit column
  let pinned = null; // a trace index compared with the selected one
  let hovered = null; // { trace, col }
  let drawQueued = false;
  let layoutStale = false; // rows to lay out again (new traces, filter or grouping) at the next frame
  let timing = ''; // how long the shown tile took, once read
  let started = 0; // when the shown tile was asked for (performance.now())
  let run = 0; // the stream whose batches are drawn (a new Show tile supersedes the last)
  let geometry = { width: 0, labelW: 0, cellW: MIN_CELL_W };

  /** Column widths from the region's width: cells as wide as fits beside a 180 px label, labels the rest. */
  function measure() {
    const avail = scroller.clientWidth;
    const cellW = Math.max(MIN_CELL_W, Math.min(MAX_CELL_W, Math.floor((avail - MIN_LABEL_W) / COMMITS)));
    const labelW = Math.max(MIN_LABEL_W, Math.min(MAX_LABEL_W, avail - COMMITS * cellW));
    const width = Math.max(avail, labelW + COMMITS * cellW);
    if (width !== geometry.width) {
      canvas.width = Math.round(width * devicePixelRatio);
      canvas.style.width = `${width}px`;
    }
    geometry = { width, labelW, cellW };
    // The geometry on the element, for tests that point at a cell.
    Object.assign(canvas.dataset, { labelW: String(labelW), cellW: String(cellW), font: FONT });
  }

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

  /** `text` drawn at (x, y), cut with an ellipsis to `width` (the full text is in the details). */
  function fitText(g, text, x, y, width) {
    if (g.measureText(text).width <= width) {
      g.fillText(text, x, y);
      return;
    }
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (g.measureText(`${text.slice(0, mid)}…`).width <= width) lo = mid; else hi = mid - 1;
    }
    g.fillText(`${text.slice(0, lo)}…`, x, y);
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
    measure();
    const { width, labelW, cellW } = geometry;
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
    g.font = FONT;
    g.textBaseline = 'middle';
    const pinnedRow = pinned === null ? -1 : view.rowOf.get(pinned) ?? -1;
    for (let r = first; r < last; r++) {
      const y = HEAD_H + (r - first) * ROW_H - (top % ROW_H);
      const row = view.rows[r];
      if (row.group !== undefined) {
        g.fillStyle = '#dde6f3';
        g.fillRect(0, y, width, ROW_H);
        g.fillStyle = '#102030';
        fitText(g, `${group.value} = ${row.group} (${row.count})`, 4, y + ROW_H / 2, width - 8);
        continue;
      }
      const t = row.trace;
      g.fillStyle = r === pinnedRow ? '#fff3c4' : r % 2 ? '#f4f4f4' : '#fff';
      g.fillRect(0, y, labelW, ROW_H);
      g.fillStyle = '#222';
      fitText(g, tile.traces[t].id, 4, y + ROW_H / 2, labelW - 8);
      const base = t * COMMITS;
      for (let c = 0; c < COMMITS; c++) {
        const n = tile.cells[base + c];
        const x = labelW + c * cellW;
        if (n === 0) {
          // A missing point: a pale cell with a dark dot, unlike any digest's colour.
          g.fillStyle = '#f1f1f1';
          g.fillRect(x, y, cellW, ROW_H);
          g.fillStyle = '#8a8a8a';
          g.fillRect(x + Math.floor(cellW / 2), y + ROW_H / 2 - 1, 1, 2);
        } else {
          g.fillStyle = digestColour(tile.digests[n - 1]);
          g.fillRect(x, y, cellW, ROW_H - 1);
        }
      }
    }
    // Column heading: repo indices every 32 commits, drawn over the rows.
    g.fillStyle = '#fff';
    g.fillRect(0, 0, width, HEAD_H);
    g.fillStyle = '#222';
    g.fillText('trace id', 4, HEAD_H / 2);
    for (let c = 0; c < COMMITS; c += 32) {
      g.fillRect(labelW + c * cellW, HEAD_H - 5, 1, 5);
      g.fillText(String(tile.index * COMMITS + c), labelW + c * cellW + 2, HEAD_H / 2);
    }
    for (const [mark, colour] of [[hovered, '#000'], [selected, '#d00']]) {
      const row = mark ? view.rowOf.get(mark.trace) : undefined;
      if (row === undefined || row < first || row >= last) continue;
      g.strokeStyle = colour;
      g.lineWidth = 1.5;
      const y = HEAD_H + (row - first) * ROW_H - (top % ROW_H);
      g.strokeRect(labelW + mark.col * cellW - 1, y - 1, cellW + 2, ROW_H + 1);
    }
  }

  /** The trace and column under a point of the canvas (col null: the label), or null. */
  function cellAt(ev) {
    const box = canvas.getBoundingClientRect();
    const x = ev.clientX - box.left;
    const y = ev.clientY - box.top;
    if (y < HEAD_H || !tile) return null;
    const row = Math.floor((y - HEAD_H + scroller.scrollTop) / ROW_H);
    if (row >= view.rows.length || view.rows[row].group !== undefined) return null;
    const col = x < geometry.labelW ? null : Math.floor((x - geometry.labelW) / geometry.cellW);
    if (col !== null && col >= COMMITS) return null;
    return { trace: view.rows[row].trace, col };
  }

  /** A digest with its colour swatch, or "missing". */
  const digestText = (digest) => (digest
    ? [el('span', { class: 'swatch', style: `background: ${digestColour(digest)}`, 'aria-hidden': 'true' }), ` ${digest}`]
    : 'missing (no digest at this commit)');

  /** The comparison of trace `a` (pinned) with `b`: differing params, and commit by commit. */
  function comparison(a, b) {
    const pa = tile.traces[a].params;
    const pb = tile.traces[b].params;
    const keys = [...new Set([...Object.keys(pa), ...Object.keys(pb)])].sort().filter((k) => pa[k] !== pb[k]);
    let same = 0;
    let bothMissing = 0;
    const differ = [];
    for (let c = 0; c < COMMITS; c++) {
      const [da, db] = [tile.digest(a, c), tile.digest(b, c)];
      if (da === db) {
        if (da) same += 1; else bothMissing += 1;
      } else {
        differ.push([c, da, db]);
      }
    }
    const commitOf = (c) => String(tile.index * COMMITS + c);
    const short = (d) => (d ? [el('span', { class: 'swatch', style: `background: ${digestColour(d)}`, 'aria-hidden': 'true' }), ` ${d.slice(0, 12)}…`] : 'missing');
    return el('section', { id: 'tile-compare', 'aria-label': 'Comparison' },
      el('h3', null, 'Compared with the pinned trace'),
      el('p', { class: 'k' }, tile.traces[a].id),
      el('p', { id: 'tile-compare-summary' },
        `${same} commit(s) with the same digest, ${differ.length} differing, ${bothMissing} missing in both.`),
      keys.length ? el('table', { class: 'params' }, el('caption', null, 'Params that differ'),
        el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Param'), el('th', { scope: 'col' }, 'Pinned'), el('th', { scope: 'col' }, 'Selected'))),
        el('tbody', null, keys.map((k) => el('tr', null, el('th', { scope: 'row' }, k), el('td', null, pa[k] ?? '—'), el('td', null, pb[k] ?? '—'))))) : null,
      differ.length ? scrollRegion(el('div', { class: 'compare-scroll' },
        el('table', { id: 'tile-compare-table' }, el('caption', null, 'Commits where they differ'),
          el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Commit'), el('th', { scope: 'col' }, 'Pinned'), el('th', { scope: 'col' }, 'Selected'))),
          el('tbody', null, differ.map(([c, da, db]) => el('tr', null, el('td', null, commitOf(c)), el('td', { class: 'k' }, short(da)), el('td', { class: 'k' }, short(db))))))),
        'Differing commits')
        : null);
  }

  /** Shows a cell's trace (and the commit, and the comparison) in the details panel. */
  function showDetails(cell) {
    if (!cell || !tile) return;
    const t = cell.trace;
    const trace = tile.traces[t];
    const col = cell.col ?? 0;
    const digest = tile.digest(t, col);
    const commit = tile.index * COMMITS + col;
    const summary = tile.commitSummary(col);
    const isPinned = pinned === t;
    // A wrapper, not replaceChildren(…null): the DOM method would show a null as the text "null".
    details.replaceChildren(el('div', null,
      el('h3', null, 'Trace'),
      el('p', { class: 'k', id: 'tile-detail-id' }, trace.id),
      el('dl', null,
        el('dt', null, 'Commit'), el('dd', { id: 'tile-detail-commit' }, String(commit)),
        el('dt', null, 'Digest'), el('dd', { id: 'tile-detail-digest', class: 'k' }, digestText(digest))),
      el('table', { class: 'params' }, el('caption', null, 'Params'), el('tbody', null,
        Object.entries(trace.params).map(([k, v]) => el('tr', null, el('th', { scope: 'row' }, k), el('td', null, v))))),
      el('h3', null, `Commit ${commit}`),
      // What the store holds of a commit: its place in a tile and the traces' digests there.
      // Hashes, authors and subjects live in Gold's git repository, not in this table.
      el('dl', { id: 'tile-commit' },
        el('dt', null, 'Tile'), el('dd', null, `${tile.index}, column ${col} of 256`),
        el('dt', null, 'Traces with a digest'), el('dd', { id: 'tile-commit-present' }, `${summary.present} of ${tile.traces.length}`),
        el('dt', null, 'Distinct digests'), el('dd', { id: 'tile-commit-digests' }, String(summary.distinct)),
        el('dt', null, 'Hash, author, subject'), el('dd', null, 'not in the trace store (Gold reads them from its git repository)')),
      el('p', null, el('button', { type: 'button', id: 'tile-pin', onclick: () => pin(isPinned ? null : t) },
        isPinned ? 'Unpin (stop comparing)' : 'Pin to compare with another trace')),
      pinned !== null && !isPinned ? comparison(pinned, t) : null,
      pinned !== null && isPinned ? el('p', null, 'Pinned: select another trace to compare it with this one.') : null));
  }

  /** Pins trace `t` (or none) for comparison, and keeps it in the URL. */
  function pin(t) {
    pinned = t;
    showDetails(selected);
    saveState(true);
    queueDraw();
  }

  /** Selects a cell; `push`: a history entry of its own (a click), else the URL is replaced. */
  function select(cell, push) {
    selected = cell;
    showDetails(cell);
    queueDraw();
    saveState(push);
  }

  // --- the URL's state ----------------------------------------------------------------------
  let restoring = false;
  function saveState(push) {
    if (restoring || !ctx.setState) return;
    const p = new URLSearchParams();
    if (tile) p.set('tile', String(tile.index));
    else if (index.value !== '') p.set('tile', index.value);
    if (filter.value) p.set('filter', filter.value);
    if (group.value) p.set('group', group.value);
    if (tile && selected) {
      p.set('trace', tile.traces[selected.trace].id);
      p.set('commit', String(tile.index * COMMITS + (selected.col ?? 0)));
    }
    if (tile && pinned !== null) p.set('compare', tile.traces[pinned].id);
    if (p.toString() === ctx.state().toString()) return;
    ctx.setState(p, { push });
  }

  canvas.addEventListener('mousemove', (ev) => {
    const cell = cellAt(ev);
    // The label column: the whole trace id as the tooltip (the label may be cut).
    canvas.title = cell ? tile.traces[cell.trace].id : '';
    if (!cell || cell.col === null) return;
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
    const cell = cellAt(ev);
    if (!cell) return;
    select({ trace: cell.trace, col: cell.col ?? selected?.col ?? 0 }, true);
  });
  // Arrow keys move the selected cell (PageUp/PageDown by a screen); the view follows it.
  scroller.addEventListener('keydown', (ev) => {
    if (!tile || !view.rows.length) return;
    const page = Math.floor((scroller.clientHeight - HEAD_H) / ROW_H);
    const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1], PageUp: [-page, 0], PageDown: [page, 0] }[ev.key];
    if (!step) return;
    ev.preventDefault();
    const atRow = selected ? view.rowOf.get(selected.trace) ?? -1 : -1;
    let row = Math.min(view.rows.length - 1, Math.max(0, atRow + step[0]));
    const dir = step[0] < 0 ? -1 : 1;
    while (view.rows[row]?.group !== undefined) row += dir;
    if (!view.rows[row]) return;
    const col = Math.min(COMMITS - 1, Math.max(0, (selected?.col ?? 0) + step[1]));
    const y = row * ROW_H;
    if (y < scroller.scrollTop) scroller.scrollTop = y;
    else if (y + ROW_H > scroller.scrollTop + scroller.clientHeight - HEAD_H) scroller.scrollTop = y + ROW_H + HEAD_H - scroller.clientHeight;
    select({ trace: view.rows[row].trace, col }, false);
  });
  scroller.addEventListener('scroll', queueDraw);
  filter.addEventListener('input', () => {
    filterValues.replaceChildren(...suggestions(filter.value, paramset).slice(0, 50).map((s) => el('option', { value: s })));
    relayout();
    saveState(false);
  });
  group.addEventListener('change', () => { relayout(); saveState(true); });

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
    canvas.setAttribute('aria-label', `Trace grid: ${text}`);
    section.dataset.traces = String(n);
    section.dataset.rows = String(view.shown);
  }

  /** The grid's data is old: a read failed. It stays for reference, marked out of date. */
  function markStale() {
    if (!tile) return;
    scroller.classList.add('stale');
    section.dataset.stale = 'true';
    stale.hidden = false;
    stale.replaceChildren(`Out of date: the grid shows tile ${tile.index} as read at `,
      ctx.formatTime({ ms: tile.readAt.getTime() }), '; it could not be read again.');
  }

  function clearStale() {
    scroller.classList.remove('stale');
    delete section.dataset.stale;
    stale.hidden = true;
  }

  /** The params' keys as Group by's options, keeping (or restoring) the chosen one. */
  function groupOptions(wanted) {
    const keys = [...paramset.keys()];
    group.replaceChildren(el('option', { value: '' }, '(no grouping)'), ...keys.map((k) => el('option', { value: k }, k)));
    group.value = keys.includes(wanted) ? wanted : '';
  }

  /**
   * Shows the shown tile's selection and comparison of `want` (`{trace, commit, compare}`: ids
   * and a repo index, as the URL has them), the selected row scrolled into view.
   */
  function showWanted(want) {
    view = layoutRows(tile, parseFilter(filter.value), group.value);
    layoutStale = true;
    const byId = (id) => (id ? tile.traces.findIndex((t) => t.id === id) : -1);
    const sel = byId(want.trace);
    selected = null;
    if (sel >= 0) {
      const col = Math.min(COMMITS - 1, Math.max(0, Number(want.commit ?? 0) - tile.index * COMMITS)) || 0;
      selected = { trace: sel, col };
      const row = view.rowOf.get(sel);
      if (row !== undefined) scroller.scrollTop = Math.max(0, row * ROW_H - (scroller.clientHeight - HEAD_H) / 2);
    }
    const cmp = byId(want.compare);
    pinned = cmp >= 0 ? cmp : null;
    if (selected) showDetails(selected);
    else details.replaceChildren(el('p', null, HINT));
    queueDraw();
  }

  /**
   * Reads and shows a tile. `want`: the state to show once it is read (from the URL):
   * `{group, trace, commit, compare}`.
   */
  async function show(want = {}) {
    const mine = ++run;
    const gold = new ctx.rowkit.TraceStore(ctx.options());
    started = performance.now();
    section.dataset.state = 'loading';
    delete section.dataset.firstRowsMs;
    delete section.dataset.wholeMs;
    let wanted = index.value === '' ? await gold.newestTile() : Number(index.value);
    if (mine !== run) return;
    if (wanted === null) {
      tile = null;
      clearStale();
      delete section.dataset.traces;
      delete section.dataset.rows;
      status.textContent = 'The table has no tile yet: put a digest first.';
      section.dataset.state = 'empty';
      queueDraw();
      return;
    }
    wanted = Math.trunc(wanted);
    const next = new TileData(wanted);
    let first = true;
    progress.hidden = false;
    progress.value = 0;
    status.textContent = `Reading tile ${wanted}…`;
    const keptGroup = want.group ?? group.value;
    await gold.streamTile(wanted, (batch) => {
      if (mine !== run) throw new Error('superseded by a newer Show tile');
      // The old tile stays until the new one's first batch: a failed read leaves it (marked).
      if (first) {
        first = false;
        tile = next;
        timing = '';
        selected = null;
        pinned = null;
        hovered = null;
        clearStale();
      }
      tile.add(batch);
      progress.value = batch.shardsDone;
      relayout();
    });
    if (first) {
      // A tile without traces still replaces the old one.
      tile = next;
      selected = null;
      pinned = null;
      clearStale();
    }
    paramset = tile.paramset();
    groupOptions(keptGroup);
    progress.hidden = true;
    showWanted(want);
    saveState(!want.restoring);
    relayout();
    // Done once the whole tile is laid out and drawn: the frame the relayout asked for runs first.
    requestAnimationFrame(() => {
      section.dataset.wholeMs = String(Math.round(performance.now() - started));
      const firstMs = section.dataset.firstRowsMs ?? section.dataset.wholeMs;
      timing = `; shown in ${(Number(section.dataset.wholeMs) / 1000).toFixed(2)} s (first rows after ${(Number(firstMs) / 1000).toFixed(2)} s)`;
      describe();
      section.dataset.state = 'done';
    });
  }

  /** Shows a failed read: the error (and the Set up hint on an empty store), the grid stale. */
  function failed(e) {
    progress.hidden = true;
    section.dataset.state = 'failed';
    ctx.fail(status, e);
    markStale();
    if (e?.code === 'not_set_up') {
      status.append(el('button', { type: 'button', id: 'tile-setup', onclick: () => setUp(status) }, 'Set up'));
    }
  }

  /** Runs Set up and says so in `out`. */
  async function setUp(out) {
    try {
      await ctx.busy(out, new ctx.rowkit.TraceStore(ctx.options()).setup());
      out.replaceChildren('Set up: the trace store\'s table exists. Put a digest to start a tile.');
    } catch (e) {
      ctx.fail(out, e);
    }
  }

  function start(want) {
    pending = null;
    ctx.busy(section, show(want)).catch((e) => {
      if (want.restoring) pending = { ...want, restoring: false };
      if (String(e?.message).startsWith('superseded')) return;
      failed(e);
    }).finally(() => { restoring = false; });
  }

  // The URL's state whose tile could not be read (e.g. a reload before the token is typed in):
  // the next Show tile of the same tile shows it.
  let pending = null;
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const problem = indexCheck.check();
    if (problem) {
      index.focus();
      status.replaceChildren(el('p', { class: 'error', role: 'alert' }, `Not shown: ${indexCheck.text}: ${problem}`));
      return;
    }
    start(pending && (pending.tile ?? '') === index.value ? pending : {});
  });
  window.addEventListener('resize', queueDraw);

  restorers.set(section, (params) => {
    restoring = true;
    index.value = params.get('tile') ?? '';
    filter.value = params.get('filter') ?? '';
    const wanted = params.get('group') ?? '';
    if ([...group.options].some((o) => o.value === wanted)) group.value = wanted;
    const want = { restoring: true, tile: params.get('tile'), group: wanted, trace: params.get('trace'), commit: params.get('commit'), compare: params.get('compare') };
    // Back or forward within the tile on screen: no need to read it again.
    if (tile && section.dataset.state === 'done' && want.tile === String(tile.index)) {
      showWanted(want);
      restoring = false;
      return;
    }
    start(want);
  });

  // --- today's operations on the table, below the grid ----------------------------------------
  const commit = el('input', { id: 'gold-commit', name: 'commit', type: 'number', min: 0, value: 1000, size: 8 });
  const params = el('input', { id: 'gold-params', name: 'params', value: 'name=circle,os=linux', size: 24 });
  const digest = el('input', { id: 'gold-digest', name: 'digest', value: '8db9913366b07bd14df9a68459e2958b', size: 34 });
  const out = scrollRegion(el('div', { id: 'gold-out', class: 'out', 'aria-live': 'polite' }), 'Trace store operation output');
  /** `k=v,k2=v2` as an object; a problem with it as a message. */
  const parseParams = (text) => {
    const entries = text.split(',').map((p) => p.trim()).filter(Boolean).map((p) => p.split('='));
    const bad = entries.find((e) => e.length !== 2 || !e[0].trim() || !e[1].trim());
    if (bad) return { problem: `"${bad.join('=')}" is not key=value (both non-empty)` };
    if (!entries.length) return { problem: 'a trace needs at least one param (key=value)' };
    return { params: Object.fromEntries(entries.map(([k, v]) => [k.trim(), v.trim()])) };
  };
  const checks = [
    validatedField(ctx.rowkit, 'Commit', commit, 'commit', (v) => (v.trim() === '' ? 'a commit (repo index) is required' : null)),
    validatedField(ctx.rowkit, 'Params', params, 'params', (v) => parseParams(v).problem ?? null),
    validatedField(ctx.rowkit, 'Digest', digest, 'digest'),
  ];
  // novalidate: the fields are checked by the view (with messages), not by the browser's bubbles.
  const opsForm = el('form', { id: 'gold-form', 'aria-label': 'Write and check', novalidate: true },
    ...checks.map((c) => c.label),
    el('button', { dataset: { op: 'put' } }, 'Put'),
    el('button', { type: 'button', dataset: { op: 'check' } }, 'Check'),
    el('button', { type: 'button', dataset: { op: 'setup' } }, 'Set up'));
  section.append(el('section', { class: 'gold-ops', 'aria-label': 'Trace store operations' },
    el('h3', null, 'Write and check'), opsForm, out));

  async function operate(op) {
    const gold = new ctx.rowkit.TraceStore(ctx.options());
    try {
      if (op === 'setup') return await setUp(out);
      if (op === 'check') {
        const report = await ctx.busy(out, gold.check());
        out.replaceChildren(checkReport(report));
        return undefined;
      }
      // Put: every field checked before the first write.
      const problems = checks.map((c) => c.check());
      const at = problems.findIndex(Boolean);
      if (at >= 0) {
        [commit, params, digest][at].focus();
        out.replaceChildren(el('p', { class: 'error', role: 'alert' }, `Not written: ${checks[at].text}: ${problems[at]}`));
        return undefined;
      }
      const entry = { params: parseParams(params.value).params, digest: digest.value.trim() };
      await ctx.busy(out, gold.put(Number(commit.value), [entry]));
      out.replaceChildren(`put ${entry.digest} at commit ${commit.value} for ${params.value}`);
    } catch (e) {
      ctx.fail(out, e);
    }
    return undefined;
  }
  opsForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    operate(ev.submitter?.dataset.op ?? 'put');
  });

  // --- Migrate: the table copied into a table of the other layout (docs/migration.md §5, §7.3) --
  // The target table must exist, empty, in the other layout: a page cannot set tables up
  // (§11.6), so a missing one is refused with the one line naming `rowkit gold setup`. The run
  // has a client of its own: a client runs one operation at a time, and the grid must stay usable.
  const migrateOpen = el('button', { type: 'button', dataset: { op: 'migrate' }, onclick: () => openMigrate() }, 'Migrate');
  opsForm.append(migrateOpen);
  const migrateTitle = el('h3', { id: 'gold-migrate-title' }, 'Migrate the table');
  const migrateStatus = el('p', { id: 'gold-migrate-status' });
  const migrateOut = el('div', { id: 'gold-migrate-out', class: 'out', 'aria-live': 'polite', 'aria-label': 'Trace store: migration output' });
  const target = el('input', { id: 'gold-migrate-target', name: 'target', size: 24, autocomplete: 'off', 'aria-describedby': 'gold-migrate-target-help' });
  const targetHelp = el('span', { id: 'gold-migrate-target-help', class: 'help' },
    'An empty table of the layout migrated to, made beforehand with rowkit gold setup --table T2 --layout L.');
  const optionsRows = el('select', { id: 'gold-migrate-options', name: 'options' },
    el('option', { value: 'refuse' }, 'refuse (stop at the first)'), el('option', { value: 'drop' }, 'drop (not copied, counted)'));
  const migrateProgress = migrationProgress('gold-migrate-progress');
  // The view's client is an md5 one (the TraceStore default): it migrates into digest-id.
  const migrate = migrateForm({ prefix: 'gold-migrate', layouts: ['digest-id'], onRun: () => runMigration(),
    fields: [field('Target table', target), targetHelp, field('Options rows (md5)', optionsRows)] });
  const migratePanel = el('div', { id: 'gold-migrate', class: 'migrate-panel', role: 'group', 'aria-labelledby': migrateTitle.id, hidden: true },
    migrateTitle, migrateStatus, migrate.node, migrateProgress.node, migrateOut);
  section.append(migratePanel);
  let migrating = false;
  /** Leaving the page stops a run (it resumes where it stopped when run again): the browser asks first. */
  const leaving = (ev) => { ev.preventDefault(); ev.returnValue = ''; };

  /** What the table's marker row says: its layout and the migration in progress. */
  function statusLine(st) {
    const m = st.marker;
    if (!m) return [`table ${st.table} (${st.layout}); no migration in progress`];
    const c = st.checkpoint;
    const pass = c && c.run === m.run ? `, pass ${c.pass} of ${c.state} (${c.rows_scanned.toLocaleString('en')} rows scanned, by ${c.owner})` : '';
    return [`table ${st.table} (${st.layout}); migrating ${m.from} → ${m.to}${m.target_table ? ` into ${m.target_table}` : ''}: ${m.state} since `,
      ctx.formatTime({ us: m.since }), pass];
  }

  async function readMigration() {
    const st = await ctx.busy(migrateStatus, new ctx.rowkit.TraceStore(ctx.options()).migrationStatus());
    migrateStatus.replaceChildren(...statusLine(st));
    if (st.marker?.target_table && !target.value) target.value = st.marker.target_table;
    return st;
  }

  async function openMigrate() {
    migratePanel.hidden = false;
    migrateOut.replaceChildren();
    migrateOut.classList.remove('error');
    migrateProgress.reset();
    try {
      await readMigration();
    } catch (e) {
      migrateStatus.textContent = '';
      ctx.fail(migrateOut, e);
    }
    target.focus();
  }

  /**
   * Runs the migration the form asks for (finish and abort confirmed first), its progress
   * shown as it comes; then the status is read again.
   */
  async function runMigration() {
    if (migrating) return;
    const v = migrate.values();
    const into = target.value.trim();
    if (!into) {
      target.setAttribute('aria-invalid', 'true');
      target.focus();
      migrateOut.replaceChildren(el('p', { class: 'error', role: 'alert' }, 'Not run: Target table: the table to migrate into is required'));
      return;
    }
    target.removeAttribute('aria-invalid');
    if (v.finish || v.abort) {
      const ok = await ctx.confirm({
        title: v.abort ? 'Roll back the migration of the trace store?' : 'Migrate the trace store and delete its old rows?',
        body: v.abort
          ? `Delete the rows the migration wrote into ${into}; the table stays as it was.`
          : `Migrate the table into ${into} (${v.to}), switch and delete the source's Gold rows once no Gold process uses it.`,
        confirm: v.abort ? 'Roll back' : 'Migrate',
      });
      if (!ok) return;
    }
    migrating = true;
    migrate.setRunning(true);
    migrateOpen.disabled = true;
    addEventListener('beforeunload', leaving);
    migrateProgress.reset();
    migrateOut.classList.remove('error');
    migrateOut.replaceChildren(`running: into ${into} (${v.to})${v.switch ? ', switch' : ''}${v.finish ? ', finish' : ''}${v.abort ? ', abort' : ''}`);
    const runner = new ctx.rowkit.TraceStore(ctx.options());
    try {
      const result = await ctx.busy(migratePanel, runner.migrate(into, v.to,
        { switch: v.switch, finish: v.finish, abort: v.abort, options: optionsRows.value, owner: tabOwner() },
        (e) => migrateProgress.event(e)));
      migrateProgress.done(result, `table ${result.table}`);
      migrateOut.replaceChildren();
      if (result.state === 'removed' || result.state === 'cleaned') migrate.clearGates();
    } catch (e) {
      ctx.fail(migrateOut, e);
    } finally {
      runner.free();
      migrating = false;
      migrate.setRunning(false);
      migrateOpen.disabled = false;
      removeEventListener('beforeunload', leaving);
    }
    try {
      await readMigration();
    } catch (e) {
      ctx.fail(migrateOut, e);
    }
  }
  for (const button of opsForm.querySelectorAll('button[type="button"]')) {
    button.addEventListener('click', () => operate(button.dataset.op));
  }
}

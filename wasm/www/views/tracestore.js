// Trace store: today's operation panel (put, read tile, check, set up).
import { panel, wire } from './panel.js';

export const title = 'Trace store';

export function mount(section, ctx) {
  panel(section, `
  <h2 id="gold-h">Trace store</h2>
  <form id="gold-form" class="panel">
    <label>Commit <input id="gold-commit" name="commit" type="number" value="1000" size="8"></label>
    <label>Params <input id="gold-params" name="params" value="name=circle,os=linux" size="24"></label>
    <label>Digest <input id="gold-digest" name="digest" value="8db9913366b07bd14df9a68459e2958b" size="40"></label>
    <button data-op="put">Put</button>
    <button data-op="tile">Read tile</button>
    <button data-op="check">Check</button>
    <button type="button" data-op="setup">Set up</button>
  </form>
  <pre id="gold-out" class="out" aria-live="polite"></pre>`);
  const $ = (id) => section.querySelector(`#${id}`);
  const gold = () => new ctx.rowkit.TraceStore(ctx.options());
  const params = () => Object.fromEntries($('gold-params').value.split(',').filter(Boolean).map((p) => p.split('=')));
  wire($('gold-form'), $('gold-out'), {
    setup: () => gold().setup(),
    put: () => gold().put(Number($('gold-commit').value), [{ params: params(), digest: $('gold-digest').value }]),
    tile: async () => {
      const t = await gold().tile(Math.floor(Number($('gold-commit').value) / 256));
      const at = t.commits.indexOf(Number($('gold-commit').value));
      return { tileIndex: t.tileIndex, traces: t.traces.map((tr) => ({ id: tr.id, digest: tr.digests[at] ?? '' })) };
    },
    // The table's check (spec/check.md): findings by kind, and each finding with its row.
    check: () => gold().check(),
  }, ctx);
}

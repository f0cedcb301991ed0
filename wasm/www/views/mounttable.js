// Mount table: today's operation panel (mount, resolve, glob, unmount, set up).
import { panel, wire } from './panel.js';

export const title = 'Mount table';

export function mount(section, ctx) {
  panel(section, `
  <h2 id="mt-h">Mount table</h2>
  <form id="mt-form" class="panel">
    <label>Name <input id="mt-name" name="name" value="demo/svc" size="24"></label>
    <label>Server <input id="mt-server" name="server" value="/127.0.0.1:8101" size="24"></label>
    <label>TTL (s) <input id="mt-ttl" name="ttl" type="number" value="3600" size="6"></label>
    <label>Glob pattern <input id="mt-pattern" name="pattern" value="..." size="8"></label>
    <button data-op="mount">Mount</button>
    <button data-op="resolve">Resolve</button>
    <button data-op="glob">Glob</button>
    <button data-op="unmount">Unmount</button>
    <button type="button" data-op="setup">Set up</button>
  </form>
  <pre id="mt-out" class="out" aria-live="polite"></pre>`);
  const $ = (id) => section.querySelector(`#${id}`);
  const mt = () => new ctx.rowkit.MountTable(ctx.options());
  wire($('mt-form'), $('mt-out'), {
    setup: () => mt().setup(),
    mount: async () => ({ deadlineUs: await mt().mount($('mt-name').value, $('mt-server').value, Number($('mt-ttl').value), 0) }),
    resolve: () => mt().resolve($('mt-name').value),
    glob: () => mt().glob('', $('mt-pattern').value),
    unmount: () => mt().unmount($('mt-name').value, $('mt-server').value),
  }, ctx);
}

// Object metadata: today's operation panel (bucket, put, get, list, check, set up).
import { panel, wire } from './panel.js';

export const title = 'Object metadata';

export function mount(section, ctx) {
  panel(section, `
  <h2 id="s3-h">Object metadata</h2>
  <form id="s3-form" class="panel">
    <label>Bucket <input id="s3-bucket" name="bucket" value="demo" size="12"></label>
    <label>Key <input id="s3-key" name="key" value="photos/cat.jpg" size="20"></label>
    <label>Value (JSON) <input id="s3-value" name="value" value='{"content-length": 3}' size="22"></label>
    <label>Delimiter <input id="s3-delimiter" name="delimiter" value="/" size="2"></label>
    <button data-op="put">Put</button>
    <button data-op="get">Get</button>
    <button data-op="list">List</button>
    <button data-op="bucket">Create bucket</button>
    <button data-op="check">Check</button>
    <button type="button" data-op="setup">Set up</button>
  </form>
  <pre id="s3-out" class="out" aria-live="polite"></pre>`);
  const $ = (id) => section.querySelector(`#${id}`);
  const s3 = () => new ctx.rowkit.ObjectMetadata(ctx.options());
  wire($('s3-form'), $('s3-out'), {
    setup: () => s3().setup(),
    bucket: () => s3().createBucket($('s3-bucket').value),
    put: () => s3().putObject($('s3-bucket').value, $('s3-key').value, JSON.parse($('s3-value').value)),
    get: () => s3().getObject($('s3-bucket').value, $('s3-key').value),
    list: () => s3().listObjects($('s3-bucket').value, { delimiter: $('s3-delimiter').value }),
    check: () => s3().check($('s3-bucket').value || undefined, false),
  }, ctx);
}

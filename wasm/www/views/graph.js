// Triples: today's operation panel (create, add, query, remove, check, set up).
import { panel, wire } from './panel.js';

export const title = 'Triples';

const METHODS = ['triples', 'objects', 'subjects', 'triples-for-subject', 'triples-for-predicate',
  'triples-for-object', 'predicates-for-subject', 'predicates-for-object',
  'predicates-for-subject-and-object', 'triples-for-subject-and-predicate', 'triples-for-predicate-and-object'];

export function mount(section, ctx) {
  panel(section, `
  <h2 id="graph-h">Triples</h2>
  <form id="graph-form" class="panel">
    <label>Graph <input id="graph-id" name="graph" value="demo" size="10"></label>
    <label>Triple <input id="graph-triple" name="triple" value='/u&lt;joe&gt; "parent_of"@[] /u&lt;mary&gt;' size="36"></label>
    <label>Query
      <select id="graph-method" name="method"></select></label>
    <label>Arguments (one per line)
      <textarea id="graph-args" name="args" rows="2" cols="24"></textarea></label>
    <button data-op="add">Add triple</button>
    <button data-op="query">Query</button>
    <button data-op="remove">Remove triple</button>
    <button data-op="create">Create graph</button>
    <button data-op="check">Check</button>
    <button type="button" data-op="setup">Set up</button>
  </form>
  <pre id="graph-out" class="out" aria-live="polite"></pre>`);
  const $ = (id) => section.querySelector(`#${id}`);
  $('graph-method').append(...METHODS.map((m) => new Option(m, m)));
  const graph = () => new ctx.rowkit.Graph($('graph-id').value, ctx.options());
  const triple = () => $('graph-triple').value;
  wire($('graph-form'), $('graph-out'), {
    setup: () => graph().setup(),
    create: () => graph().create(),
    add: () => graph().add([triple()]),
    remove: () => graph().remove([triple()]),
    query: async () => (await graph().query($('graph-method').value,
      $('graph-args').value.split('\n').map((s) => s.trim()).filter(Boolean))).map((f) => f.item),
    check: () => graph().check(false),
  }, ctx);
}

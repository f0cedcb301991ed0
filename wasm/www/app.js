// The rowkit browser tool: key inspector, table browser and one panel per schema, all running
// rowkit's wasm package (the same codecs and state machines as the CLI). Requests go through
// the gateway that serves this page (or the URL typed in), or to an in-page memory store.
import init, * as rowkit from './pkg/rowkit.js';

const $ = (id) => document.getElementById(id);

function options() {
  if ($('offline').checked) return {};
  const gateway = $('gateway').value.trim() || location.origin;
  const token = $('token').value;
  return token ? { gateway, token } : { gateway };
}

function show(out, value) {
  out.classList.remove('error');
  out.textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

// An error replaces the output as an alert, so assistive technology announces it at once.
function fail(out, e) {
  const alert = document.createElement('span');
  alert.setAttribute('role', 'alert');
  alert.textContent = `${e.code ? e.code + ': ' : ''}${e.message ?? e}`;
  out.classList.add('error');
  out.replaceChildren(alert);
}

// Runs a panel's operations, showing each result (or error) in `out`. A submit (a click on an
// operation button, or Enter in a field) runs the button's operation; Enter runs the form's
// default button, the first submit button, which is the panel's main operation. `Set up` is a
// plain button (`type="button"`) so that it only ever runs when clicked.
function wire(formId, outId, ops) {
  const form = $(formId);
  const out = $(outId);
  const run = async (op) => {
    out.setAttribute('aria-busy', 'true');
    try {
      show(out, (await ops[op]()) ?? 'ok');
    } catch (e) {
      fail(out, e);
    } finally {
      out.removeAttribute('aria-busy');
    }
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const button = ev.submitter ?? form.querySelector('button:not([type="button"])');
    run(button.dataset.op);
  });
  for (const button of form.querySelectorAll('button[type="button"][data-op]')) {
    button.addEventListener('click', () => run(button.dataset.op));
  }
}

function fieldsTable(doc) {
  const t = document.createElement('table');
  const body = t.createTBody();
  const add = (k, v) => {
    const r = body.insertRow();
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = k;
    r.append(th);
    const td = r.insertCell();
    td.className = 'k';
    td.textContent = typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  };
  for (const [k, v] of Object.entries(doc)) add(k, v);
  return t;
}

function keyInspector() {
  $('key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const out = $('key-out');
    out.replaceChildren();
    try {
      const doc = rowkit.decodeKey($('key-schema').value, $('key-input').value);
      const t = fieldsTable(doc);
      t.createCaption().textContent = `Row key decoded as ${doc.schema}${doc.kind ? ` (${doc.kind})` : ''}`;
      out.classList.remove('error');
      out.append(t);
    } catch (e) {
      fail(out, e);
    }
  });
}

function tableBrowser() {
  $('browse-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const out = $('browse-out');
    out.setAttribute('aria-busy', 'true');
    try {
      const rows = await rowkit.scanRows(options(), $('browse-table').value,
        $('browse-prefix').value, Number($('browse-limit').value) || 0, $('browse-schema').value);
      const t = document.createElement('table');
      t.createCaption().textContent = `${rows.length} row(s)`;
      const head = t.createTHead().insertRow();
      for (const h of ['Row key', 'Decoded', 'Cells']) {
        const th = document.createElement('th');
        th.scope = 'col';
        th.textContent = h;
        head.append(th);
      }
      const body = t.createTBody();
      for (const row of rows) {
        const r = body.insertRow();
        r.insertCell().textContent = row.row_key;
        r.cells[0].className = 'k';
        const dec = r.insertCell();
        if (row.decoded) dec.append(fieldsTable(row.decoded));
        const cells = r.insertCell();
        cells.className = 'k';
        cells.textContent = row.cells
          .map((c) => `${c.family}:${c.qualifier} @${c.timestampMicros} = ${c.value}`)
          .join('\n');
      }
      out.classList.remove('error');
      out.replaceChildren(t);
    } catch (e) {
      fail(out, e);
    } finally {
      out.removeAttribute('aria-busy');
    }
  });
}

function panels() {
  const mt = () => new rowkit.MountTable(options());
  wire('mt-form', 'mt-out', {
    setup: () => mt().setup(),
    mount: async () => ({ deadlineUs: await mt().mount($('mt-name').value, $('mt-server').value, Number($('mt-ttl').value), 0) }),
    resolve: () => mt().resolve($('mt-name').value),
    glob: () => mt().glob('', $('mt-pattern').value),
    unmount: () => mt().unmount($('mt-name').value, $('mt-server').value),
  });

  const gold = () => new rowkit.TraceStore(options());
  const params = () => Object.fromEntries($('gold-params').value.split(',').filter(Boolean).map((p) => p.split('=')));
  wire('gold-form', 'gold-out', {
    setup: () => gold().setup(),
    put: () => gold().put(Number($('gold-commit').value), [{ params: params(), digest: $('gold-digest').value }]),
    tile: async () => {
      const t = await gold().tile(Math.floor(Number($('gold-commit').value) / 256));
      const at = t.commits.indexOf(Number($('gold-commit').value));
      return { tileIndex: t.tileIndex, traces: t.traces.map((tr) => ({ id: tr.id, digest: tr.digests[at] ?? '' })) };
    },
    // The table's check (spec/check.md): findings by kind, and each finding with its row.
    check: () => gold().check(),
  });

  const s3 = () => new rowkit.ObjectMetadata(options());
  wire('s3-form', 's3-out', {
    setup: () => s3().setup(),
    bucket: () => s3().createBucket($('s3-bucket').value),
    put: () => s3().putObject($('s3-bucket').value, $('s3-key').value, JSON.parse($('s3-value').value)),
    get: () => s3().getObject($('s3-bucket').value, $('s3-key').value),
    list: () => s3().listObjects($('s3-bucket').value, { delimiter: $('s3-delimiter').value }),
    check: () => s3().check($('s3-bucket').value || undefined, false),
  });

  const methods = ['triples', 'objects', 'subjects', 'triples-for-subject', 'triples-for-predicate',
    'triples-for-object', 'predicates-for-subject', 'predicates-for-object',
    'predicates-for-subject-and-object', 'triples-for-subject-and-predicate', 'triples-for-predicate-and-object'];
  $('graph-method').append(...methods.map((m) => new Option(m, m)));
  const graph = () => new rowkit.Graph($('graph-id').value, options());
  const triple = () => $('graph-triple').value;
  wire('graph-form', 'graph-out', {
    setup: () => graph().setup(),
    create: () => graph().create(),
    add: () => graph().add([triple()]),
    remove: () => graph().remove([triple()]),
    query: async () => (await graph().query($('graph-method').value,
      $('graph-args').value.split('\n').map((s) => s.trim()).filter(Boolean))).map((f) => f.item),
    check: () => graph().check(false),
  });
}

await init();
keyInspector();
tableBrowser();
panels();
$('status').textContent = 'ready';
document.body.dataset.ready = 'true';

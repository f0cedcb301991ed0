// The rowkit browser tool's shell: connection settings and the connection state, the navigation
// between the views, one <section> per view module (views/<name>.js, see their `mount`), the
// URL state of each view (deep links, the back button), the confirmation dialog, readable
// errors. Every view runs rowkit's wasm package (the same codecs and state machines as the
// CLI); its requests go to the gateway that serves this page (or the URL typed in), or to the
// page's in-memory store. The context each view gets is described in `viewContext`.
import { describe, failure, formatTime, humanSize, capNotice, copyButton, scrollRegion } from './views/dom.js';

/** The views, in navigation order: each is `views/<name>.js` exporting `title` and `mount`. */
const VIEWS = ['tracestore', 'mounttable', 'bucket', 'graph', 'keys', 'tables'];

/** The per-operation deadline the views' clients get (`deadlineMs`), in milliseconds. */
const DEADLINE_MS = 8000;
/** How often the gateway's `/healthz` is probed while a gateway is selected, and its timeout. */
const PROBE_EVERY_MS = 3000;
const PROBE_TIMEOUT_MS = 2000;
/** Error codes that mean the gateway may be gone: the connection state is probed at once. */
const CONNECTION_CODES = new Set(['unavailable', 'deadline_exceeded', 'aborted', 'cancelled']);

const $ = (id) => document.getElementById(id);

/** Shows `text` as the page's status; an error is also announced at once (role="alert"). */
function setStatus(text, error = false) {
  const status = $('status');
  status.textContent = text;
  status.classList.toggle('error', error);
  status.setAttribute('role', error ? 'alert' : 'status');
}

/** The client options the wasm classes take: no `gateway` = the page's memory store. */
function options() {
  if ($('offline').checked) return { deadlineMs: DEADLINE_MS };
  const gateway = $('gateway').value.trim() || location.origin;
  const token = $('token').value;
  return token ? { gateway, token, deadlineMs: DEADLINE_MS } : { gateway, deadlineMs: DEADLINE_MS };
}

// How many operations each element is busy with (two may overlap: a superseded one ending
// must not clear the mark of the one still running).
const busyCounts = new WeakMap();

/** Marks `el` busy (aria-busy) while `promise` runs; resolves (or rejects) as it does. */
async function busy(el, promise) {
  busyCounts.set(el, (busyCounts.get(el) ?? 0) + 1);
  el.setAttribute('aria-busy', 'true');
  try {
    return await promise;
  } finally {
    const left = busyCounts.get(el) - 1;
    busyCounts.set(el, left);
    if (left === 0) el.removeAttribute('aria-busy');
  }
}

const clock = (d) => d.toTimeString().slice(0, 8);

/**
 * The visible connection state (`#connection` in the header): the gateway's `/healthz` probed
 * every 3 s (2 s timeout) while a gateway is selected, and at once after `failed(e)`.
 */
function connectionState() {
  const node = $('connection');
  let answered = null; // null: not probed yet
  let since = null;
  let why = '';
  let generation = 0;
  const gateway = () => options().gateway ?? null;

  function show() {
    const gw = gateway();
    let text;
    let state;
    if (!gw) {
      [text, state] = ['offline (in-page store)', 'offline'];
    } else if (answered === null) {
      [text, state] = [`checking the gateway at ${gw} …`, 'checking'];
    } else if (answered) {
      [text, state] = [`connected · gateway ${gw}${$('token').value ? ' (with token)' : ''}`, 'connected'];
    } else {
      [text, state] = [`cannot reach the gateway at ${gw} since ${clock(since)} (${why})`, 'unreachable'];
    }
    if (node.textContent !== text) node.textContent = text;
    node.dataset.state = state;
  }

  async function probe() {
    const gw = gateway();
    const mine = ++generation;
    if (!gw) {
      answered = null;
      show();
      return;
    }
    let ok = false;
    let reason = '';
    try {
      const r = await fetch(`${gw.replace(/\/+$/, '')}/healthz`, { cache: 'no-store', signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      ok = r.ok;
      reason = `HTTP ${r.status} from /healthz`;
    } catch (e) {
      // fetch says only "Failed to fetch" for a refused connection, a bad host or a CORS refusal.
      reason = e?.name === 'TimeoutError' ? `no answer within ${PROBE_TIMEOUT_MS / 1000} s` : 'connection refused';
    }
    if (mine !== generation || gw !== gateway()) return; // the settings changed meanwhile
    if (!ok && answered !== false) since = new Date();
    answered = ok;
    why = reason;
    show();
  }

  for (const id of ['gateway', 'token', 'offline']) {
    $(id).addEventListener('change', () => {
      answered = null;
      show();
      probe();
    });
  }
  setInterval(() => { if (gateway()) probe(); }, PROBE_EVERY_MS);
  probe();
  return {
    /** Whether the last probe of the gateway answered (false before the first, and offline). */
    ok: () => answered === true,
    /** Called after an operation failed with unavailable/deadline/aborted: probes at once. */
    failed: () => probe(),
  };
}

/** The confirmation dialog (`#confirm-dialog`): resolves true only when the danger button is pressed. */
function confirmDialog({ title, body, confirm = 'Delete' }) {
  const dialog = $('confirm-dialog');
  if (dialog.open) return Promise.resolve(false);
  $('confirm-title').textContent = title;
  $('confirm-body').textContent = body ?? '';
  $('confirm-ok').textContent = confirm;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
    // Cancel first: Enter or a stray click on the focused button never destroys anything.
    $('confirm-cancel').focus();
  });
}

/**
 * Loads the wasm package. A 404 on pkg/rowkit.js means the served directory was never built:
 * that is said in words, as is a package that fails to compile or instantiate.
 */
async function loadPackage() {
  const url = new URL('pkg/rowkit.js', location.href);
  let probe;
  try {
    probe = await fetch(url, { method: 'HEAD', cache: 'no-store' });
  } catch (e) {
    throw new Error(`cannot reach ${url}: ${describe(e)}`);
  }
  if (!probe.ok) {
    throw new Error(`${url.pathname} is not served (HTTP ${probe.status}): the directory this page `
      + 'comes from has no built wasm package. Build it with wasm/build.sh, or run rowkit serve '
      + 'without --www to use the tool built into rowkit.');
  }
  const rowkit = await import('./pkg/rowkit.js');
  try {
    await rowkit.default();
  } catch (e) {
    throw new Error(`the wasm package did not start: ${describe(e)}`);
  }
  return rowkit;
}

/** The location's fragment as a view name and its state (`#<view>?<query>`). */
function parseHash() {
  const hash = location.hash.slice(1);
  const at = hash.indexOf('?');
  return at < 0 ? { name: hash, query: '' } : { name: hash.slice(0, at), query: hash.slice(at + 1) };
}

const hashOf = (view) => `#${view.name}${view.state ? `?${view.state}` : ''}`;

/** The navigation: one link per view; the current one carries aria-current="page". */
function navigation(views) {
  const list = $('nav');
  for (const v of views) {
    const a = document.createElement('a');
    a.href = `#${v.name}`;
    a.id = `nav-${v.name}`;
    a.textContent = v.title;
    const li = document.createElement('li');
    li.append(a);
    list.append(li);
  }
  // Left/Right (and Home/End) move between the links, as in a menu bar; Tab still leaves.
  list.addEventListener('keydown', (ev) => {
    const links = [...list.querySelectorAll('a')];
    const at = links.indexOf(document.activeElement);
    if (at < 0) return;
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: links.length - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    links[(to + links.length) % links.length].focus();
  });
}

/** Shows `current` and hides the other views. */
function show(views, current, moveFocus) {
  for (const v of views) {
    const on = v === current;
    v.section.hidden = !on;
    const link = $(`nav-${v.name}`);
    if (on) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = `${current.title} · rowkit`;
  if (moveFocus) current.section.focus();
  document.body.dataset.view = current.name;
}

/**
 * The view and state the URL names, shown: the view's `restore(params, section)` runs when the
 * URL's state differs from what the view shows (a deep link, a reload, back/forward).
 */
function route(views, moveFocus) {
  const { name, query } = parseHash();
  const current = views.find((v) => v.name === name) ?? views[0];
  show(views, current, moveFocus);
  if (query !== current.state) {
    current.state = query;
    $(`nav-${current.name}`).href = hashOf(current);
    if (current.restore) {
      Promise.resolve()
        .then(() => current.restore(new URLSearchParams(query), current.section))
        .catch((e) => setStatus(`the ${current.name} view could not show ${location.hash}: ${describe(e)}`, true));
    }
  }
}

/**
 * Keeps the Gateway field and the offline choice across reloads of this tab (sessionStorage).
 * The token is not kept: it is typed again after a reload.
 */
function keepConnectionSettings() {
  const gateway = sessionStorage.getItem('rowkit.gateway');
  if (gateway !== null) $('gateway').value = gateway;
  $('offline').checked = sessionStorage.getItem('rowkit.offline') === 'true';
  $('gateway').addEventListener('change', () => sessionStorage.setItem('rowkit.gateway', $('gateway').value.trim()));
  $('offline').addEventListener('change', () => sessionStorage.setItem('rowkit.offline', String($('offline').checked)));
}

async function main() {
  $('conn').addEventListener('submit', (ev) => ev.preventDefault());
  keepConnectionSettings();
  let rowkit;
  try {
    rowkit = await loadPackage();
  } catch (e) {
    setStatus(`The browser tool cannot start: ${describe(e)}`, true);
    document.body.dataset.ready = 'failed';
    return;
  }
  const connection = connectionState();
  /** Replaces `el`'s content with the error (readable line as an alert, detail behind a disclosure). */
  const fail = (el, e) => {
    el.replaceChildren(failure(e));
    if (CONNECTION_CODES.has(String(e?.code ?? '').toLowerCase())) connection.failed(e);
  };
  const shared = { rowkit, options, fail, describe, busy, confirm: confirmDialog, connection, formatTime, humanSize, capNotice, copyButton };
  let views = [];
  /** What `mount(section, ctx)` gets: the shared members plus the view's own URL state. */
  const viewContext = (view) => ({
    ...shared,
    /** The view's state (a copy of its URLSearchParams). */
    state: () => new URLSearchParams(view.state),
    /** Writes the view's state into the URL (pushState, or replaceState with `push: false`). */
    setState(params, { push = true } = {}) {
      const query = new URLSearchParams(params).toString();
      view.state = query;
      $(`nav-${view.name}`)?.setAttribute('href', hashOf(view));
      // A view that is not on screen (a late answer) only records its state.
      if (document.body.dataset.view !== view.name || location.hash === hashOf(view)) return;
      if (push) history.pushState(null, '', hashOf(view));
      else history.replaceState(null, '', hashOf(view));
    },
  });
  // A view whose module fails to load or mount shows why in its own section; the others work.
  views = await Promise.all(VIEWS.map(async (name) => {
    const section = document.createElement('section');
    section.id = `view-${name}`;
    section.className = `view view-${name}`;
    section.tabIndex = -1;
    section.hidden = true;
    $('views').append(section);
    const view = { name, title: name, section, state: '', restore: null };
    try {
      const module = await import(`./views/${name}.js`);
      section.setAttribute('aria-label', module.title);
      view.title = module.title;
      view.restore = module.restore ?? null;
      module.mount(section, viewContext(view));
      // The shared output boxes (`.out`, which scroll) are reachable by keyboard in every view.
      for (const out of section.querySelectorAll('.out')) scrollRegion(out, `${view.title}: output`);
    } catch (e) {
      section.setAttribute('aria-label', name);
      fail(section, new Error(`the ${name} view did not load: ${describe(e)}`));
    }
    return view;
  }));
  navigation(views);
  route(views, false);
  // Back/forward fire popstate (and hashchange when the fragment differs); a link fires hashchange.
  window.addEventListener('popstate', () => route(views, true));
  window.addEventListener('hashchange', () => route(views, true));
  setStatus('ready');
  document.body.dataset.ready = 'true';
}

// Anything a view did not catch still reaches the user.
window.addEventListener('unhandledrejection', (ev) => setStatus(`error: ${describe(ev.reason)}`, true));
main();

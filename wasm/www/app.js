// The rowkit browser tool's shell: connection settings, the navigation between the views, one
// <section> per view module (views/<name>.js, see their `mount`), status and readable errors.
// Every view runs rowkit's wasm package (the same codecs and state machines as the CLI); its
// requests go to the gateway that serves this page (or the URL typed in), or to the page's
// in-memory store.

/** The views, in navigation order: each is `views/<name>.js` exporting `title` and `mount`. */
const VIEWS = ['tracestore', 'mounttable', 'bucket', 'graph', 'keys', 'tables'];

const $ = (id) => document.getElementById(id);

/** An error as one readable line: its stable `code` (rowkit's errors carry one) and message. */
function describe(e) {
  return `${e?.code ? `${e.code}: ` : ''}${e?.message ?? e}`;
}

/** Shows `text` as the page's status; an error is also announced at once (role="alert"). */
function setStatus(text, error = false) {
  const status = $('status');
  status.textContent = text;
  status.classList.toggle('error', error);
  status.setAttribute('role', error ? 'alert' : 'status');
}

/** The connection options the wasm classes take: `{}` = the page's memory store. */
function options() {
  if ($('offline').checked) return {};
  const gateway = $('gateway').value.trim() || location.origin;
  const token = $('token').value;
  return token ? { gateway, token } : { gateway };
}

/** Replaces `el`'s content with the error as an alert, so assistive technology announces it. */
function fail(el, e) {
  const alert = document.createElement('p');
  alert.className = 'error';
  alert.setAttribute('role', 'alert');
  alert.textContent = describe(e);
  el.replaceChildren(alert);
}

/** Marks `el` busy (aria-busy) while `promise` runs; resolves (or rejects) as it does. */
async function busy(el, promise) {
  el.setAttribute('aria-busy', 'true');
  try {
    return await promise;
  } finally {
    el.removeAttribute('aria-busy');
  }
}

function connectionText() {
  const o = options();
  if (!o.gateway) return 'in-page memory store';
  return `gateway ${o.gateway}${o.token ? ' (with token)' : ''}`;
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

/** Shows the view named in the URL's fragment (default: the first) and hides the others. */
function route(views, moveFocus) {
  const wanted = location.hash.slice(1);
  const current = views.find((v) => v.name === wanted) ?? views[0];
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

async function main() {
  $('conn').addEventListener('submit', (ev) => ev.preventDefault());
  let rowkit;
  try {
    rowkit = await loadPackage();
  } catch (e) {
    setStatus(`The browser tool cannot start: ${describe(e)}`, true);
    document.body.dataset.ready = 'failed';
    return;
  }
  const ctx = { rowkit, options, fail, busy };
  // A view whose module fails to load or mount shows why in its own section; the others work.
  const views = await Promise.all(VIEWS.map(async (name) => {
    const section = document.createElement('section');
    section.id = `view-${name}`;
    section.className = `view view-${name}`;
    section.tabIndex = -1;
    section.hidden = true;
    $('views').append(section);
    try {
      const module = await import(`./views/${name}.js`);
      section.setAttribute('aria-label', module.title);
      module.mount(section, ctx);
      return { name, title: module.title, section };
    } catch (e) {
      section.setAttribute('aria-label', name);
      fail(section, new Error(`the ${name} view did not load: ${describe(e)}`));
      return { name, title: name, section };
    }
  }));
  navigation(views);
  route(views, false);
  window.addEventListener('hashchange', () => route(views, true));
  const showConnection = () => setStatus(`ready · ${connectionText()}`);
  for (const id of ['gateway', 'token', 'offline']) $(id).addEventListener('change', showConnection);
  showConnection();
  document.body.dataset.ready = 'true';
}

// Anything a view did not catch still reaches the user.
window.addEventListener('unhandledrejection', (ev) => setStatus(`error: ${describe(ev.reason)}`, true));
main();

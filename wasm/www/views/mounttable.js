// The mount table as a tree of names: each level read when it is expanded (a glob of `name/*`,
// one level at a time), each node with its servers, their remaining TTL counting down, its
// flags and permissions; mount, unmount and delete from the tree as the caller named in the
// view (the CLI's `--as`). The tree follows the WAI-ARIA tree pattern: one tab stop, arrow keys
// move, Right/Left expand and collapse, Enter/Space select. Deletes and unmounts ask first,
// saying what will go; a change re-reads only the level it changed, keeping what is open and
// selected; the selection and the open names are the URL's state (reload and back restore them).
// The form's fields are checked as typed, with the CLI's rules (the wasm package's `validate`).
import { cachedClient, checkReport, el, field, scrollRegion, table, uniqueId, validatedField } from './dom.js';

export const title = 'Mount table';

/** `a` joined with the child name `b` (the root is the empty name). */
const join = (a, b) => (a && b ? `${a}/${b}` : a || b);

/** Remaining time of a deadline (µs since the epoch) from now, as `1h 02m 03s` or `expired`. */
export function remaining(deadlineUs, nowMs = Date.now()) {
  const s = Math.floor((deadlineUs / 1000 - nowMs) / 1000);
  if (s <= 0) return 'expired';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n) => String(n).padStart(2, '0');
  return h ? `${h}h ${two(m)}m ${two(sec)}s` : m ? `${m}m ${two(sec)}s` : `${sec}s`;
}

/** A permissions object (`{Tag: {In, NotIn}}`) as one line: `Admin: ... · Read: alice, !bob`. */
function permsLine(perms) {
  return Object.entries(perms).map(([tag, acl]) =>
    `${tag}: ${[...(acl.In ?? []), ...(acl.NotIn ?? []).map((n) => `!${n}`)].join(', ') || '(none)'}`)
    .join(' · ') || '(no tags)';
}

/** The mounted view's `restore`, by section (the shell calls the module's `restore`). */
const restorers = new WeakMap();

/** Shows the state of the URL: `open` (each expanded name, repeated) and `sel` (the selection). */
export function restore(params, section) {
  restorers.get(section)?.(params);
}

export function mount(section, ctx) {
  section.classList.add('view-mounttable');
  const as = el('input', { id: 'mt-as', name: 'as', size: 28, placeholder: 'the server itself',
    'aria-describedby': 'mt-as-help' });
  const client = cachedClient(() => {
    const names = as.value.split(',').map((s) => s.trim()).filter(Boolean);
    return names.length ? { ...ctx.options(), as: names } : ctx.options();
  }, (o) => new ctx.rowkit.MountTable(o));

  const tree = el('ul', { id: 'mt-tree', role: 'tree', 'aria-label': 'Mount table names', class: 'mt-tree' });
  const details = el('div', { id: 'mt-details', class: 'mt-details', 'aria-live': 'polite' });
  const out = scrollRegion(el('div', { id: 'mt-out', class: 'out', 'aria-live': 'polite' }), 'Mount table operation output');
  let selected = null; // the selected node's record

  // --- one node of the tree ------------------------------------------------------------------
  // A record per shown node: its entry (servers, flags), its <li>, its child <ul> once read.
  function nodeItem(name, entry, level) {
    const label = el('span', { class: 'mt-name' }, name ? name.split('/').pop() : '(root)');
    const servers = el('span', { class: 'mt-servers' }, entry.servers.map((s) =>
      el('span', { class: 'mt-server' }, el('code', null, s.server), ' ',
        el('span', { class: 'mt-ttl', dataset: { deadlineUs: String(s.deadlineUs) },
          title: `deadline ${new Date(s.deadlineUs / 1000).toISOString()}` }, remaining(s.deadlineUs)))));
    const flags = el('span', { class: 'mt-flags' },
      entry.mt ? el('span', { class: 'badge', title: 'the server is a mount table' }, 'MT') : null,
      entry.leaf ? el('span', { class: 'badge', title: 'the server is a leaf' }, 'leaf') : null,
      entry.servers.length ? null : el('span', { class: 'badge dir' }, 'dir'));
    const perms = el('span', { class: 'mt-perms' }, '…');
    // A node with live servers is a mount point: glob does not descend below it.
    const expandable = entry.servers.length === 0;
    const li = el('li', {
      id: uniqueId('mt-node'), role: 'treeitem', 'aria-level': level, 'aria-selected': 'false', tabindex: -1,
      'aria-expanded': expandable ? 'false' : null, dataset: { name },
    }, el('div', { class: 'mt-row' },
      el('span', { class: 'mt-toggle', 'aria-hidden': 'true' }, expandable ? '▸' : '·'),
      label, flags, servers, perms));
    const node = { name, entry, li, level, expandable, children: null, perms };
    li.rowkitNode = node;
    li.addEventListener('click', (ev) => {
      ev.stopPropagation();
      focusNode(node);
      select(node, true);
      if (node.expandable && ev.target.closest('.mt-toggle')) toggle(node);
    });
    li.addEventListener('dblclick', (ev) => { ev.stopPropagation(); if (node.expandable) toggle(node); });
    // The root's permissions are read with its children (the page may not have its token yet).
    if (name) loadPerms(node);
    return node;
  }

  async function loadPerms(node) {
    try {
      const pv = await client().permissions(node.name);
      node.permsDoc = pv;
      node.perms.textContent = permsLine(pv.perms);
      node.perms.title = `permissions version ${pv.version}`;
    } catch (e) {
      node.perms.textContent = `permissions: ${e.code ?? 'error'}`;
      node.perms.title = e.message ?? String(e);
    }
    if (selected === node) showDetails(node);
  }

  /** Whether a child's entry as read now is what its shown node holds (nothing to redraw). */
  const sameEntry = (a, b) => JSON.stringify([a.servers, a.mt, a.leaf]) === JSON.stringify([b.servers, b.mt, b.leaf]);

  // Reads the children of `node` (glob `*` under its name) and shows them under it. Read again,
  // a level keeps its unchanged children as they are (open subtrees, selection, focus); a
  // changed child is drawn anew with its open subtree moved over; a gone one leaves.
  async function expand(node) {
    let entries;
    try {
      entries = await ctx.busy(node.li, client().glob(node.name, '*'));
    } catch (e) {
      markStale();
      throw e;
    }
    clearStale();
    loadPerms(node);
    const shown = new Map();
    for (const li of node.children?.querySelectorAll(':scope > [role="treeitem"]') ?? []) shown.set(li.rowkitNode.name, li.rowkitNode);
    const hadFocus = node.children?.contains(document.activeElement) ? document.activeElement : null;
    const ul = el('ul', { role: 'group' });
    const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of sorted) {
      const name = join(node.name, e.name);
      const prev = shown.get(name);
      if (prev && sameEntry(prev.entry, e)) {
        ul.append(prev.li);
        continue;
      }
      const fresh = nodeItem(name, e, node.level + 1);
      if (prev?.children && fresh.expandable) {
        fresh.children = prev.children;
        fresh.li.append(prev.children);
        fresh.li.setAttribute('aria-expanded', 'true');
        fresh.li.querySelector('.mt-toggle').textContent = '▾';
      }
      ul.append(fresh.li);
      if (prev && selected === prev) select(fresh, false);
      if (prev && hadFocus === prev.li) focusNode(fresh);
    }
    if (sorted.length === 0) ul.append(el('li', { role: 'none', class: 'mt-empty' }, '(no children)'));
    node.children?.remove();
    node.children = ul;
    node.li.append(ul);
    node.li.setAttribute('aria-expanded', 'true');
    node.li.querySelector('.mt-toggle').textContent = '▾';
    // A selection that left the tree (deleted, or under a deleted name): nothing is selected.
    if (selected && !tree.contains(selected.li)) unselect(`${selected.name} is no longer in the mount table.`);
    if (hadFocus && !tree.contains(hadFocus)) focusNode(node);
    saveState(false);
  }

  function collapse(node) {
    node.children?.remove();
    node.children = null;
    node.li.setAttribute('aria-expanded', 'false');
    node.li.querySelector('.mt-toggle').textContent = '▸';
    saveState(false);
  }

  async function toggle(node) {
    try {
      if (node.children) collapse(node); else await expand(node);
    } catch (e) {
      failed(e);
    }
  }

  // A level that could not be read: the tree shown stays for reference, marked out of date.
  const stale = el('p', { id: 'mt-stale', class: 'stale-notice', hidden: true });
  let readAt = null; // when a level was last read
  function markStale() {
    if (!root.children) return;
    tree.classList.add('stale');
    section.dataset.stale = 'true';
    stale.hidden = false;
    stale.replaceChildren('Out of date: the tree below was read at ', ctx.formatTime({ ms: readAt }), '; it could not be read again.');
  }
  function clearStale() {
    readAt = Date.now();
    tree.classList.remove('stale');
    delete section.dataset.stale;
    stale.hidden = true;
  }

  /** An operation failed: the error in the output (the shell probes the connection on its codes). */
  function failed(e) {
    ctx.fail(out, e);
  }

  // --- keyboard: the roving tabindex of the tree pattern ---------------------------------------
  const visible = () => [...tree.querySelectorAll('[role="treeitem"]')]
    .filter((li) => !li.parentElement.closest('[aria-expanded="false"]'));
  function focusNode(node) {
    for (const li of tree.querySelectorAll('[role="treeitem"][tabindex="0"]')) li.tabIndex = -1;
    node.li.tabIndex = 0;
    node.li.focus();
  }
  tree.addEventListener('keydown', (ev) => {
    const li = ev.target.closest('[role="treeitem"]');
    if (!li) return;
    const node = li.rowkitNode;
    const items = visible();
    const at = items.indexOf(li);
    const go = (i) => { if (items[i]) focusNode(items[i].rowkitNode); };
    switch (ev.key) {
      case 'ArrowDown': go(at + 1); break;
      case 'ArrowUp': go(at - 1); break;
      case 'Home': go(0); break;
      case 'End': go(items.length - 1); break;
      case 'ArrowRight':
        if (node.expandable && !node.children) toggle(node);
        else if (node.children) go(at + 1);
        break;
      case 'ArrowLeft':
        if (node.children) collapse(node);
        else {
          const parent = li.parentElement.closest('[role="treeitem"]');
          if (parent) focusNode(parent.rowkitNode);
        }
        break;
      case 'Enter': case ' ': select(node, true); break;
      default: return;
    }
    ev.preventDefault();
  });

  // --- the selected node: details and the actions on it ---------------------------------------
  /** Selects `node`: its details, its name in the form; `push`: a history entry of its own. */
  function select(node, push) {
    if (selected) selected.li.setAttribute('aria-selected', 'false');
    selected = node;
    node.li.setAttribute('aria-selected', 'true');
    if (node.name) {
      name.value = node.name;
      nameCheck.check();
    }
    showDetails(node);
    saveState(push);
  }

  /** Nothing selected any more; `why` is said in the details pane. */
  function unselect(why) {
    selected?.li.setAttribute('aria-selected', 'false');
    selected = null;
    details.replaceChildren(el('p', { class: 'mt-none' }, why));
    saveState(false);
  }

  function showDetails(node) {
    const { entry } = node;
    const unmountOne = (server) => el('button', { type: 'button',
      'aria-label': `Unmount ${server} from ${node.name || 'the root'}`,
      onclick: () => confirmThen({ title: 'Unmount a server', confirm: 'Unmount',
        body: `Unmount ${server} from ${node.name || 'the root'}: it will no longer resolve there.` },
      () => act(`unmounted ${server}`, (mt) => mt.unmount(node.name, server), parentOf(node))) }, 'Unmount');
    // A wrapper, not replaceChildren(…null): the DOM method would show a null as the text "null".
    details.replaceChildren(el('div', null,
      el('h3', null, node.name || '(root)'),
      el('dl', null,
        el('dt', null, 'Servers'),
        el('dd', null, entry.servers.length
          ? el('ul', null, entry.servers.map((s) => el('li', null, el('code', null, s.server), ' — until ',
            ctx.formatTime({ us: s.deadlineUs }), ' (',
            el('span', { class: 'mt-ttl', dataset: { deadlineUs: String(s.deadlineUs) } }, remaining(s.deadlineUs)),
            ' left) ', unmountOne(s.server))))
          : 'none (a directory)'),
        el('dt', null, 'Flags'),
        el('dd', null, [entry.mt ? 'mount table' : null, entry.leaf ? 'leaf' : null].filter(Boolean).join(', ') || 'none'),
        el('dt', null, 'Permissions'),
        el('dd', null, node.permsDoc
          ? [table(null, ['Tag', 'In', 'Not in'], Object.entries(node.permsDoc.perms).map(([tag, acl]) =>
            [tag, (acl.In ?? []).join(', '), (acl.NotIn ?? []).join(', ')])), `version ${node.permsDoc.version}`]
          : node.perms.textContent)),
      node.name ? el('div', { class: 'mt-actions' },
        el('button', { type: 'button', dataset: { op: 'delete' }, onclick: () => confirmThen({ title: 'Delete a name', confirm: 'Delete',
          body: `Delete ${node.name}${entry.servers.length ? ` and its ${entry.servers.length} mounted server(s)` : ''} (refused if it has children).` },
        () => act(`deleted ${node.name}`, (mt) => mt.delete(node.name, false), parentOf(node))) }, 'Delete'),
        el('button', { type: 'button', dataset: { op: 'delete-subtree' }, onclick: () => deleteSubtree(node) }, 'Delete subtree'))
        : null));
  }

  /** Runs `then` once the user confirmed `question` (the shell's confirmation dialog). */
  async function confirmThen(question, then) {
    if (await ctx.confirm(question)) await then();
  }

  /** Delete subtree, after a confirmation naming how many names go and the first of them. */
  async function deleteSubtree(node) {
    let names;
    try {
      names = (await ctx.busy(out, client().glob(node.name, '...'))).map((e) => join(node.name, e.name));
    } catch (e) {
      failed(e);
      return;
    }
    const below = names.filter((n) => n !== node.name);
    const list = below.slice(0, 8).join(', ') + (below.length > 8 ? `, … (${below.length - 8} more)` : '');
    await confirmThen({ title: 'Delete a subtree', confirm: 'Delete subtree',
      body: `Delete subtree ${node.name}: ${below.length + 1} name(s) — ${node.name}${below.length ? ` and ${list}` : ''}.` },
    () => act(`deleted ${node.name} and its subtree`, (mt) => mt.delete(node.name, true), parentOf(node)));
  }

  const parentOf = (node) => node.li.parentElement.closest('[role="treeitem"]')?.rowkitNode ?? root;

  // Runs a change as the caller, then re-reads the level it changed (`refresh`, a node).
  async function act(what, change, refresh) {
    try {
      await ctx.busy(out, change(client()));
      out.classList.remove('error');
      out.replaceChildren(what);
      await refreshLevel(refresh);
    } catch (e) {
      failed(e);
    }
  }

  // Re-reads `node`'s children if they are shown (re-expanding them), keeping the focus.
  async function refreshLevel(node) {
    if (!node) return;
    if (node === root) {
      await expand(root);
    } else if (node.children) {
      await expand(node);
    }
  }

  // --- the forms -------------------------------------------------------------------------------
  const name = el('input', { id: 'mt-name', name: 'name', size: 24, value: 'demo/svc', required: true });
  const server = el('input', { id: 'mt-server', name: 'server', size: 24, value: '/127.0.0.1:8101' });
  const ttl = el('input', { id: 'mt-ttl', name: 'ttl', type: 'number', min: 0, size: 6, value: 3600 });
  const nameCheck = validatedField(ctx.rowkit, 'Name', name, 'mountName', (v) => (v.trim() === '' ? 'a name is required' : null));
  const serverCheck = validatedField(ctx.rowkit, 'Server', server, 'address', (v) => (v.trim() === '' ? 'a server address is required' : null));
  const ttlCheck = validatedField(ctx.rowkit, 'TTL (s)', ttl, null,
    (v) => (/^\d+$/.test(v.trim()) ? null : 'the TTL is a whole number of seconds (0: the server\'s default)'));
  const formChecks = [[name, nameCheck], [server, serverCheck], [ttl, ttlCheck]];
  const flag = (label, bit) => {
    const box = el('input', { type: 'checkbox', name: label, dataset: { bit: String(bit) } });
    return { box, label: el('label', null, box, ` ${label}`) };
  };
  const flagMt = flag('mount table', 2);
  const flagLeaf = flag('leaf', 4);
  const flagReplace = flag('replace', 1);
  // novalidate: the fields are checked by the view (with messages), not by the browser's bubbles.
  const form = el('form', { id: 'mt-form', 'aria-label': 'Mount', novalidate: true },
    ...formChecks.map(([, c]) => c.label),
    el('fieldset', { class: 'mt-flagset' }, el('legend', null, 'Flags'), flagMt.label, flagLeaf.label, flagReplace.label),
    el('button', { dataset: { op: 'mount' } }, 'Mount'),
    el('button', { type: 'button', dataset: { op: 'check' }, onclick: () => run('check', () => client().check(false)) }, 'Check'),
    el('button', { type: 'button', dataset: { op: 'setup' }, onclick: () => run('setup', () => client().setup()) }, 'Set up'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const flags = [flagMt, flagLeaf, flagReplace].reduce((f, x) => f | (x.box.checked ? Number(x.box.dataset.bit) : 0), 0);
    const target = name.value.trim();
    // Every field checked before the first write; the first invalid one gets the focus.
    const bad = formChecks.find(([, c]) => c.check());
    if (bad) {
      bad[0].focus();
      out.replaceChildren(el('p', { class: 'error', role: 'alert' }, `Not mounted: ${bad[1].text}: ${bad[1].check()}`));
      return;
    }
    act(`mounted ${server.value} on ${target}`,
      (mt) => mt.mount(target, server.value, Number(ttl.value) || 0, flags),
      deepestShown(target));
  });

  // The deepest shown node on the path of `target` (the level a mount there changes).
  function deepestShown(target) {
    let best = root;
    for (const li of tree.querySelectorAll('[role="treeitem"]')) {
      const n = li.rowkitNode;
      if (n.children && (target === n.name || target.startsWith(`${n.name}/`)) && n.name.length >= best.name.length) best = n;
    }
    return best;
  }

  async function run(what, op) {
    try {
      const result = await ctx.busy(out, op());
      out.classList.remove('error');
      out.replaceChildren(what === 'check' ? checkReport(result) : `${what}: ok`);
      if (what === 'setup') await expand(root);
    } catch (e) {
      failed(e);
    }
  }

  const root = nodeItem('', { name: '', servers: [], mt: false, leaf: false }, 1);
  root.li.tabIndex = 0;
  tree.append(root.li);

  // The tree is read when asked (expanding the root, or this button), not when the page loads:
  // a gateway with a token answers only once the token is typed in.
  const reload = el('button', { type: 'button',
    id: 'mt-read', onclick: () => (pending ? restorers.get(section)(pending) : expand(root).then(() => saveState(true)).catch(failed)) }, 'Read tree');
  section.append(
    el('h2', null, title),
    el('form', { id: 'mt-identity', class: 'mt-identity', 'aria-label': 'Caller', onsubmit: (ev) => { ev.preventDefault(); reload.click(); } },
      field('Act as (blessing names, comma-separated)', as),
      el('span', { id: 'mt-as-help', class: 'help' }, 'empty: the server itself, which may do anything'),
      reload),
    form,
    out,
    stale,
    el('div', { class: 'mt-panes' }, tree, details));

  // --- the URL's state: the open names and the selection --------------------------------------
  let restoring = false;
  function saveState(push) {
    if (restoring || !ctx.setState) return;
    const p = new URLSearchParams();
    for (const li of tree.querySelectorAll('[role="treeitem"][aria-expanded="true"]')) {
      if (li.rowkitNode !== root) p.append('open', li.rowkitNode.name);
    }
    if (selected) p.set('sel', selected.name);
    if (p.toString() === ctx.state().toString()) return;
    ctx.setState(p, { push });
  }

  const shownNode = (wanted) => [...tree.querySelectorAll('[role="treeitem"]')].find((li) => li.dataset.name === wanted)?.rowkitNode;
  // The URL's state that could not be shown (e.g. a reload before the token is typed in): the
  // next Read tree shows it.
  let pending = null;
  restorers.set(section, async (params) => {
    restoring = true;
    pending = null;
    try {
      await expand(root);
      // Parents before children: each level is read once its parent is shown.
      const open = params.getAll('open').sort((a, b) => a.split('/').length - b.split('/').length);
      for (const wanted of open) {
        const node = shownNode(wanted);
        if (node?.expandable && !node.children) await expand(node);
      }
      for (const li of tree.querySelectorAll('[role="treeitem"][aria-expanded="true"]')) {
        const n = li.rowkitNode;
        if (n !== root && !open.includes(n.name)) collapse(n);
      }
      const sel = params.get('sel');
      const node = sel === null ? null : shownNode(sel);
      if (node) select(node, false);
      else if (sel !== null) unselect(`${sel || '(root)'} is not in the mount table (or not shown).`);
      else if (selected) unselect('Select a name to see its servers and permissions.');
    } catch (e) {
      pending = params;
      failed(e);
    } finally {
      restoring = false;
    }
  });

  // The TTLs count down: every second each shown deadline is rewritten.
  const timer = setInterval(() => {
    if (!section.isConnected) { clearInterval(timer); return; }
    const now = Date.now();
    for (const span of section.querySelectorAll('.mt-ttl')) span.textContent = remaining(Number(span.dataset.deadlineUs), now);
  }, 1000);
}

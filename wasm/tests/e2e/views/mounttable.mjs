// Mount-table view: a tree of names four levels deep (written with the CLI) is read level by
// level, by mouse and by arrow keys; servers, flags, permissions, TTLs counting down and
// deadlines as dates are on screen; a mount from the form (Enter) shows up in its level without
// collapsing what is open or losing the selection; bad input in every field is refused as typed;
// an unmount and a delete subtree ask first (Cancel leaves everything); a delete is refused to a
// caller without the right (the view's "act as" field) and done as the server; the details pane
// follows the selection; the open names and the selection survive a reload and the back button;
// the schema's check runs. `after` reads the store back with the CLI; `setup` and `offline`
// per the e2e contract.
import { assert } from '../webdriver.mjs';
import { offlineError } from './offline.mjs';

/** name → [server, ttl seconds, flags] mounted by `populate`. */
const MOUNTS = {
  'apps/web/frontend': ['/127.0.0.1:8101', '3600', 'leaf'],
  'apps/web/api': ['/127.0.0.1:8102', '600', ''],
  'apps/web/static/cdn': ['/127.0.0.1:8103', '86400', ''],
  'apps/db/primary': ['/127.0.0.1:8201', '7200', 'mt'],
  'apps/db/replica': ['/127.0.0.1:8202', '7200', 'mt'],
  'users/alice/home': ['/127.0.0.1:8301', '3600', ''],
  'users/alice/devices/phone': ['/127.0.0.1:8302', '1800', ''],
  'users/bob/home': ['/127.0.0.1:8401', '3600', ''],
  'infra/dns/ns1': ['/127.0.0.1:53', '86400', 'leaf'],
  'infra/dns/ns2': ['/127.0.0.1:54', '86400', 'leaf'],
};

/** Every name `populate` creates under `prefix` (itself, intermediate directories, mount points). */
function namesUnder(prefix) {
  const names = new Set();
  for (const n of Object.keys(MOUNTS)) {
    const parts = n.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const name = parts.slice(0, i).join('/');
      if (name === prefix || name.startsWith(`${prefix}/`)) names.add(name);
    }
  }
  return [...names];
}

export async function populate(cli) {
  for (const [name, [server, ttl, flags]] of Object.entries(MOUNTS)) {
    await cli(['mt', 'mount', name, server, '--ttl', ttl, ...(flags ? ['--flags', flags] : [])]);
  }
  // alice's names are hers to administer (the root's default lets every caller in).
  const alice = JSON.stringify({ Admin: { In: ['alice'] }, Read: { In: ['...'] }, Resolve: { In: ['...'] } });
  await cli(['mt', 'perms', 'set', 'users/alice', alice]);
  await cli(['mt', 'perms', 'set', 'users/alice/home', alice]);
}

const item = (name) => `#mt-tree [role="treeitem"][data-name="${name}"]`;

/** What the tree shows of `name`: null when not shown, else its row's parts and attributes. */
async function node(page, name) {
  return page.js(`const li = document.querySelector(arguments[0]);
    if (!li) return null;
    const row = li.querySelector(':scope > .mt-row');
    return { id: li.id, level: li.getAttribute('aria-level'), expanded: li.getAttribute('aria-expanded'),
      selected: li.getAttribute('aria-selected'),
      servers: [...row.querySelectorAll('.mt-server code')].map((c) => c.textContent),
      ttl: [...row.querySelectorAll('.mt-ttl')].map((t) => t.textContent),
      flags: [...row.querySelectorAll('.mt-flags .badge')].map((b) => b.textContent),
      perms: row.querySelector('.mt-perms').textContent };`, item(name));
}

const shown = (page, name, what) => page.until(`return document.querySelector(arguments[0]) !== null`, what, item(name));
const expanded = (page, names) => page.js(`return arguments[0].filter((n) =>
  document.querySelector('#mt-tree [role="treeitem"][data-name="' + n + '"]')?.getAttribute('aria-expanded') === 'true')`, names);
const detailsTitle = (page) => page.js(`return document.querySelector('#mt-details h3')?.textContent ?? document.getElementById('mt-details').textContent`);

/**
 * Clicks `css`, then in the confirmation dialog (screenshot `mounttable-confirm-<shot>`) the
 * button `answer` (`ok` or `cancel`); returns the dialog's text.
 */
async function confirmed(page, css, answer, shot) {
  await page.click(css);
  const body = await page.until(`const d = document.getElementById('confirm-dialog'); return d.open && d.textContent`, `the confirmation of ${css}`);
  await page.shot(`mounttable-confirm-${shot}`);
  await page.axe(`mounttable (confirmation: ${shot})`);
  await page.click(`#confirm-${answer}`);
  await page.until(`return !document.getElementById('confirm-dialog').open`, 'the dialog to close');
  return body;
}

/** What the page showed, for `after`. */
const seen = {};

export async function check(page) {
  await page.axe('mounttable (not read yet)');
  // Level 1 → 2: the root's children, read when asked.
  await page.click('#mt-read');
  await shown(page, 'apps', 'the root level (apps)');
  await shown(page, 'infra', 'the root level (infra)');
  const root = await node(page, '');
  assert(root.expanded === 'true' && root.level === '1', `the root is expanded: ${JSON.stringify(root)}`);

  // Level 2 → 3 by mouse, then 3 → 4 by keyboard: ArrowDown moves (apps → apps/db → apps/web), ArrowRight expands.
  await page.click(`${item('apps')} .mt-toggle`);
  await shown(page, 'apps/web', 'the second level (apps/web)');
  const apps = await node(page, 'apps');
  await page.keys(apps.id, '\uE015');
  assert(await page.js(`return document.activeElement.dataset.name`) === 'apps/db', 'ArrowDown moves to apps/db');
  await page.keys((await node(page, 'apps/db')).id, '\uE015');
  await page.keys((await node(page, 'apps/web')).id, '\uE014');
  await shown(page, 'apps/web/frontend', 'the third level (apps/web/frontend)');
  await page.click(`${item('apps/web/static')} .mt-toggle`);
  await shown(page, 'apps/web/static/cdn', 'the fourth level (apps/web/static/cdn)');
  assert((await node(page, 'apps/web/static/cdn')).level === '5', 'cdn is four names below the root');

  // A mount point: its server, flags, permissions and a TTL that counts down.
  const frontend = await node(page, 'apps/web/frontend');
  assert(JSON.stringify(frontend.servers) === '["/127.0.0.1:8101"]' && frontend.flags.includes('leaf'), `frontend: ${JSON.stringify(frontend)}`);
  const ttl = /^(\d+)m (\d\d)s$/.exec(frontend.ttl[0]);
  assert(ttl && Number(ttl[1]) * 60 + Number(ttl[2]) <= 3600, `frontend's TTL under an hour: ${frontend.ttl}`);
  await page.until(`return document.querySelector(arguments[0] + ' .mt-ttl').textContent !== arguments[1]`,
    'the TTL to count down', item('apps/web/frontend'), frontend.ttl[0]);
  await page.click(`${item('apps/db')} .mt-toggle`);
  await shown(page, 'apps/db/primary', 'apps/db/primary');

  // Selecting shows the details: the deadline as a date, alice's permissions from the store.
  await page.click(`${item('apps/db/primary')} .mt-name`);
  const details = await page.until(`const d = document.getElementById('mt-details');
    return d.querySelector('table') && d.querySelector('time') ? [d.textContent, d.querySelector('time').getAttribute('datetime')] : null`,
  'the details of apps/db/primary');
  assert(details[0].startsWith('apps/db/primary') && details[0].includes('/127.0.0.1:8201') && details[0].includes('mount table'), `details: ${details[0]}`);
  assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(details[1]), `the deadline is a date: ${details[1]}`);
  seen.primaryDeadline = details[1];
  await page.shot('mounttable');
  await page.axe('mounttable (tree and details)');

  // Bad input in every field: marked as typed, refused on Mount.
  const refuse = async (id, text, what) => {
    await page.clear(id);
    if (text) await page.keys(id, text);
    const r = await page.outcome('mt-out', what, () => page.click('#mt-form button[data-op="mount"]'));
    const [invalid, message] = await page.js(`return [document.getElementById(arguments[0]).getAttribute('aria-invalid'),
      document.getElementById(arguments[0] + '-error')?.textContent ?? null]`, id);
    assert(r.alert?.startsWith('Not mounted: ') && r.alert.endsWith(`: ${message}`) && message && invalid === 'true' && !r.alert.includes('v.io/'),
      `${what} is refused before writing, with the field's message: ${r.text} (aria-invalid ${invalid}, message ${message})`);
    return r.alert;
  };
  await page.type('mt-name', 'apps/web/bad');
  await page.type('mt-server', '/127.0.0.1:8999');
  await refuse('mt-ttl', '-5', 'a negative TTL');
  await page.type('mt-ttl', '3600');
  await refuse('mt-server', '', 'an empty server');
  seen.badAddress = await refuse('mt-server', 'not an address', 'a malformed address');
  await page.type('mt-server', '/127.0.0.1:8999');
  await refuse('mt-name', '', 'an empty name');
  await refuse('mt-name', '   ', 'a name of spaces');
  await page.shot('mounttable-bad-input');
  await page.axe('mounttable (bad input marked)');

  // Mount from the form, by Enter in a field: the open tree and the selection stay.
  await page.type('mt-name', 'apps/web/e2e');
  const mounted = await page.outcome('mt-out', 'Enter in the server field', () => page.keys('mt-server', '\uE007'));
  assert(mounted.alert === null && mounted.text.startsWith('mounted /127.0.0.1:8999'), `mount: ${mounted.text}`);
  await shown(page, 'apps/web/e2e', 'the new mount in its level');
  const open = await expanded(page, ['apps', 'apps/web', 'apps/web/static', 'apps/db']);
  assert(open.length === 4, `mounting left the tree open: ${open}`);
  assert((await node(page, 'apps/db/primary')).selected === 'true' && (await detailsTitle(page)) === 'apps/db/primary',
    'mounting kept the selection and its details');

  // Unmount one server from the selected node's details: Cancel leaves it, OK unmounts it.
  await page.click(`${item('apps/web/api')} .mt-name`);
  await page.until(`return document.querySelector('#mt-details h3')?.textContent === 'apps/web/api'`, 'the details follow the selection');
  const unmountButton = '#mt-details button[aria-label="Unmount /127.0.0.1:8102 from apps/web/api"]';
  const asked = await confirmed(page, unmountButton, 'cancel', 'unmount');
  assert(asked.includes('/127.0.0.1:8102') && asked.includes('apps/web/api'), `the unmount names what goes: ${asked}`);
  assert(JSON.stringify((await node(page, 'apps/web/api')).servers) === '["/127.0.0.1:8102"]', 'Cancel left the server');
  await page.click(unmountButton);
  await page.until(`return document.getElementById('confirm-dialog').open`, 'the confirmation');
  const unmounted = await page.outcome('mt-out', 'unmount api', () => page.click('#confirm-ok'));
  assert(unmounted.alert === null && unmounted.text === 'unmounted /127.0.0.1:8102', `unmount: ${unmounted.text}`);
  await page.until(`const n = document.querySelector(arguments[0]);
    return n === null || n.querySelector('.mt-server') === null`, 'api without its server', item('apps/web/api'));
  const after = await page.js(`return document.getElementById('mt-details').textContent`);
  assert(!after.includes('/127.0.0.1:8102'), `the details no longer show the unmounted server: ${after}`);

  // Delete as bob: refused (alice administers users/alice/home); as the server: done.
  await page.click(`${item('users')} .mt-toggle`);
  await shown(page, 'users/alice', 'users/alice');
  await page.click(`${item('users/alice')} .mt-toggle`);
  await shown(page, 'users/alice/home', 'users/alice/home');
  await page.click(`${item('users/alice/home')} .mt-name`);
  await page.type('mt-as', 'bob');
  await page.click('#mt-details button[data-op="delete"]');
  await page.until(`return document.getElementById('confirm-dialog').open`, 'the delete confirmation');
  const refused = await page.outcome('mt-out', 'delete as bob', () => page.click('#confirm-ok'));
  assert(refused.alert?.includes('permission'), `bob may not delete alice's name: ${refused.text}`);
  assert(await node(page, 'users/alice/home') !== null, 'the refused delete left the node');
  await page.clear('mt-as');

  // Delete subtree: the confirmation counts what goes; Cancel first, then Delete subtree.
  await page.click(`${item('users/alice')} .mt-name`);
  const aliceNames = namesUnder('users/alice');
  const body = await confirmed(page, '#mt-details button[data-op="delete-subtree"]', 'cancel', 'delete-subtree');
  assert(body.includes(`Delete subtree users/alice: ${aliceNames.length} name(s)`) && aliceNames.every((n) => body.includes(n)),
    `the confirmation names the ${aliceNames.length} names: ${body}`);
  assert(await node(page, 'users/alice/home') !== null, 'Cancel deleted nothing');
  await page.click('#mt-details button[data-op="delete-subtree"]');
  await page.until(`return document.getElementById('confirm-dialog').open`, 'the confirmation');
  const deleted = await page.outcome('mt-out', 'delete subtree', () => page.click('#confirm-ok'));
  assert(deleted.alert === null && deleted.text === 'deleted users/alice and its subtree', `delete subtree: ${deleted.text}`);
  await page.until(`return document.querySelector(arguments[0]) === null`, 'users/alice to leave the tree', item('users/alice'));
  const gone = await page.js(`return document.getElementById('mt-details').textContent`);
  assert(gone.includes('users/alice is no longer in the mount table'), `the details say the selection went: ${gone}`);

  // The URL holds the open names and the selection: reload restores them, back goes a step back.
  await page.click(`${item('infra')} .mt-toggle`);
  await shown(page, 'infra/dns', 'infra/dns');
  await page.click(`${item('apps/web/frontend')} .mt-name`);
  await page.click(`${item('apps/db/replica')} .mt-name`);
  const hash = await page.js('return location.hash');
  assert(hash.includes('sel=apps%2Fdb%2Freplica') && hash.includes('open=apps%2Fweb%2Fstatic'), `the URL holds the state: ${hash}`);
  const wasOpen = await expanded(page, ['apps', 'apps/web', 'apps/web/static', 'apps/db', 'users', 'infra']);
  const token = await page.js(`return document.getElementById('token').value`);
  await page.reload();
  await page.until(`return document.body.dataset.ready === 'true'`, 'the page after the reload');
  if (token) {
    // The token is not kept by the page: type it again; Read tree then shows the URL's state.
    await page.until(`return document.querySelector('#mt-out [role="alert"]')`, 'the restore without a token');
    await page.type('token', token);
    await page.click('#mt-read');
  }
  await page.until(`return document.querySelector('#mt-details h3')?.textContent === 'apps/db/replica'`, 'the restored selection');
  assert(JSON.stringify(await expanded(page, ['apps', 'apps/web', 'apps/web/static', 'apps/db', 'users', 'infra'])) === JSON.stringify(wasOpen),
    `reload restored the open names ${wasOpen}`);
  await page.back();
  await page.until(`return document.querySelector('#mt-details h3')?.textContent === 'apps/web/frontend'`, 'back to the previous selection');
  assert((await node(page, 'apps/web/frontend')).selected === 'true', 'back selects frontend again');

  // The schema's check (fsck) over the gateway.
  const checked = await page.outcome('mt-out', 'mt check', () => page.click('#mt-form button[data-op="check"]'));
  assert(checked.alert === null && /Schemamt.*Left0/.test(checked.text), `mt check: ${checked.text}`);
}

/** The gateway is gone: Read tree fails within OFFLINE_ERROR_MS, the tree is marked out of date, the header says so. */
export async function offline(page) {
  const hadData = await page.js(`return document.querySelector('#mt-tree .mt-row + ul') !== null`);
  await offlineError(page, { view: 'mounttable', button: '#mt-read', out: 'mt-out', staleId: 'mt-stale', hadData });
}

/** An empty server: Read tree says to set up, Set up works, Read tree then works. */
export async function setup(page) {
  const first = await page.outcome('mt-out', 'Read tree on an empty store', () => page.click('#mt-read'));
  assert(first.alert?.includes('Set up'), `the empty store's hint: ${first.text}`);
  await page.shot('mounttable-not-set-up');
  await page.axe('mounttable (empty store)');
  const done = await page.outcome('mt-out', 'Set up', () => page.click('#mt-form button[data-op="setup"]'));
  assert(done.alert === null && done.text === 'setup: ok', `Set up: ${done.text}`);
  const again = await page.outcome('mt-out', 'mt check after Set up', () => page.click('#mt-form button[data-op="check"]'));
  assert(again.alert === null, `the mount table works after Set up: ${again.text}`);
  assert(await page.js(`return document.querySelector('#mt-tree .mt-empty') !== null`), 'the new table\'s root has no children');
}

export async function after(cli) {
  const names = new Map(JSON.parse(await cli(['--json', 'mt', 'glob', '...'])).map((e) => [e.name, e]));
  assert(names.get('apps/web/e2e')?.servers.some((s) => s.server === '/127.0.0.1:8999'), 'the mount made in the page');
  assert(![...names.keys()].some((n) => n.startsWith('users/alice')), 'users/alice and its subtree were deleted');
  assert(!names.get('apps/web/api')?.servers.some((s) => s.server === '/127.0.0.1:8102'), 'api\'s server was unmounted');
  assert(names.has('users/bob/home') && names.has('infra/dns/ns1'), 'the rest of the tree is there');
  assert(![...names.keys()].some((n) => n.includes('bad')), 'no refused mount was written');
  // The deadline the details showed as a date is the one the CLI reads.
  const primary = JSON.parse(await cli(['--json', 'mt', 'resolve', 'apps/db/primary']));
  const shownMs = Date.parse(seen.primaryDeadline);
  const storedMs = primary.servers[0].deadline_us / 1000;
  assert(Math.abs(shownMs - storedMs) < 1000, `the deadline shown ${seen.primaryDeadline} is the stored one ${new Date(storedMs).toISOString()}`);
}

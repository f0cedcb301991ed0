// Mount-table view: a tree of names three levels deep (written with the CLI) is read level by
// level, by mouse and by arrow keys; servers, flags, permissions and TTLs counting down are on
// screen; a mount from the form (Enter) shows up in its level, an unmount from the details
// takes the server away; a delete is refused to a caller without the right (the view's "act as"
// field) and done as the server; the schema's check runs.
import { assert } from '../webdriver.mjs';
import { dump } from './panel.mjs';

/** name → [server, ttl seconds, flags] mounted by `populate`. */
const MOUNTS = {
  'apps/web/frontend': ['/127.0.0.1:8101', '3600', 'leaf'],
  'apps/web/api': ['/127.0.0.1:8102', '600', ''],
  'apps/db/primary': ['/127.0.0.1:8201', '7200', 'mt'],
  'users/alice/home': ['/127.0.0.1:8301', '3600', ''],
};

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

export async function check(page) {
  // Level 1 → 2: the root's children, read when asked.
  await page.click('#mt-identity button');
  await shown(page, 'apps', 'the root level (apps)');
  await shown(page, 'users', 'the root level (users)');
  const root = await node(page, '');
  assert(root.expanded === 'true' && root.level === '1', `the root is expanded: ${JSON.stringify(root)}`);
  assert(await page.js(`return document.getElementById('mt-tree').getAttribute('role')`) === 'tree', 'the tree has role=tree');

  // Level 2 → 3 by mouse, then 3 → 4 by keyboard: ArrowDown moves (apps → apps/db → apps/web,
  // sorted), ArrowRight expands.
  await page.click(`${item('apps')} .mt-toggle`);
  await shown(page, 'apps/web', 'the second level (apps/web)');
  const apps = await node(page, 'apps');
  assert(apps.expanded === 'true' && apps.flags.includes('dir'), `apps is an expanded directory: ${JSON.stringify(apps)}`);
  await page.keys(apps.id, '\uE015');
  assert(await page.js(`return document.activeElement.dataset.name`) === 'apps/db', 'ArrowDown moves to apps/db');
  await page.keys((await node(page, 'apps/db')).id, '\uE015');
  assert(await page.js(`return document.activeElement.dataset.name`) === 'apps/web', 'ArrowDown moves to apps/web');
  await page.keys((await node(page, 'apps/web')).id, '\uE014');
  await shown(page, 'apps/web/frontend', 'the third level (apps/web/frontend)');
  const web = await node(page, 'apps/web');
  assert(web.expanded === 'true' && web.level === '3', `apps/web expanded by ArrowRight: ${JSON.stringify(web)}`);

  // A mount point: its server, flags, permissions and a TTL that counts down.
  const frontend = await node(page, 'apps/web/frontend');
  assert(frontend.level === '4' && frontend.expanded === null, `a mount point is a leaf of the tree: ${JSON.stringify(frontend)}`);
  assert(JSON.stringify(frontend.servers) === '["/127.0.0.1:8101"]', `frontend's server: ${JSON.stringify(frontend)}`);
  assert(frontend.flags.includes('leaf') && !frontend.flags.includes('MT'), `frontend's flags: ${frontend.flags}`);
  const ttl = /^(\d+)m (\d\d)s$/.exec(frontend.ttl[0]);
  assert(ttl && Number(ttl[1]) * 60 + Number(ttl[2]) <= 3600 && Number(ttl[1]) >= 1, `frontend's TTL under an hour: ${frontend.ttl}`);
  await page.until(`return document.querySelector(arguments[0] + ' .mt-ttl').textContent !== arguments[1]`,
    'the TTL to count down', item('apps/web/frontend'), frontend.ttl[0]);
  await page.until(`return document.querySelector(arguments[0] + ' .mt-perms').textContent.startsWith('Admin: ...')`,
    'frontend\'s permissions', item('apps/web/frontend'));
  const api = await node(page, 'apps/web/api');
  assert(/^\d+m \d\ds$/.test(api.ttl[0]) && Number(api.ttl[0].split('m')[0]) < 10, `api's TTL under 10 minutes: ${api.ttl}`);
  await page.click(`${item('apps/db')} .mt-toggle`);
  await shown(page, 'apps/db/primary', 'apps/db/primary');
  const primary = await node(page, 'apps/db/primary');
  assert(primary.flags.includes('MT') && primary.servers[0] === '/127.0.0.1:8201', `primary is a mount table: ${JSON.stringify(primary)}`);

  // Selecting shows the details; alice's permissions come from the store.
  await page.click(`${item('apps/web/frontend')} .mt-name`);
  const details = await page.until(`const d = document.getElementById('mt-details');
    return d.querySelector('table') ? d.textContent : null`, 'the details of apps/web/frontend');
  assert(details.startsWith('apps/web/frontend') && details.includes('/127.0.0.1:8101') && details.includes('leaf')
    && details.includes('Admin'), `details: ${details}`);
  assert((await node(page, 'apps/web/frontend')).selected === 'true', 'the selected node is aria-selected');
  await page.click(`${item('users')} .mt-toggle`);
  await shown(page, 'users/alice', 'users/alice');
  await page.until(`return document.querySelector(arguments[0] + ' .mt-perms').textContent.startsWith('Admin: alice')`,
    'alice\'s permissions', item('users/alice'));
  await page.shot('mounttable');

  // Mount from the form, by Enter in a field: the level it lands in is read again.
  await page.type('mt-name', 'apps/web/e2e');
  await page.type('mt-server', '/127.0.0.1:8999');
  const mounted = await page.outcome('mt-out', 'Enter in the server field', () => page.keys('mt-server', '\uE007'));
  assert(mounted.alert === null && mounted.text.startsWith('mounted /127.0.0.1:8999'), `mount: ${mounted.text}`);
  await shown(page, 'apps/web/e2e', 'the new mount in its level');
  assert(JSON.stringify((await node(page, 'apps/web/e2e')).servers) === '["/127.0.0.1:8999"]', 'the new mount shows its server');

  // Unmount one server from the selected node's details: the node no longer shows it.
  await page.click(`${item('apps/web/api')} .mt-name`);
  const unmounted = await page.outcome('mt-out', 'unmount api', () =>
    page.click('#mt-details button[aria-label="Unmount /127.0.0.1:8102 from apps/web/api"]'));
  assert(unmounted.alert === null && unmounted.text === 'unmounted /127.0.0.1:8102', `unmount: ${unmounted.text}`);
  await page.until(`const n = document.querySelector(arguments[0]);
    return n === null || n.querySelector('.mt-server') === null`, 'api without its server', item('apps/web/api'));

  // Delete as bob: refused (alice administers users/alice/home); as the server: done.
  await page.click(`${item('users/alice')} .mt-toggle`);
  await shown(page, 'users/alice/home', 'users/alice/home');
  await page.click(`${item('users/alice/home')} .mt-name`);
  await page.type('mt-as', 'bob');
  const refused = await page.outcome('mt-out', 'delete as bob', () => page.click('#mt-details button[data-op="delete"]'));
  assert(refused.alert?.includes('no permissions'), `bob may not delete alice's name: ${refused.text}`);
  assert(await node(page, 'users/alice/home') !== null, 'the refused delete left the node');
  await page.js(`document.getElementById('mt-as').value = ''`);
  const deleted = await page.outcome('mt-out', 'delete as the server', () => page.click('#mt-details button[data-op="delete"]'));
  assert(deleted.alert === null && deleted.text === 'deleted users/alice/home', `delete: ${deleted.text}`);
  await page.until(`return document.querySelector(arguments[0]) === null`, 'the deleted node to leave the tree', item('users/alice/home'));

  // The schema's check (fsck) over the gateway.
  const checked = await page.outcome('mt-out', 'mt check', () => page.click('#mt-form button[data-op="check"]'));
  assert(checked.alert === null && /Schemamt.*Left0/.test(checked.text), `mt check: ${checked.text}`);
}

export async function after(cli) {
  const cells = await dump(cli, 'mounttable');
  assert(cells.some((c) => c.row_key.endsWith('/apps/web/e2e') && c.qualifier === '/127.0.0.1:8999'), 'mounttable has the mount made in the page');
  assert(!cells.some((c) => c.row_key.endsWith('/users/alice/home')), 'users/alice/home was deleted');
  assert(!cells.some((c) => c.qualifier === '/127.0.0.1:8102'), 'api\'s server was unmounted');
}

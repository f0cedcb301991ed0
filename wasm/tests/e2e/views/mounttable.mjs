// Mount table view: mount by Enter in a field, resolve; the mount is in the store afterwards.
import { assert } from '../webdriver.mjs';
import { defaultButton, dump, op } from './panel.mjs';

export async function populate() {}

export async function check(page) {
  await defaultButton(page, 'mt', 'mount');
  await page.type('mt-name', 'e2e/svc');
  await page.type('mt-server', '/127.0.0.1:8101');
  // Pressing Enter runs Mount (Set up would answer "ok" or fail: the mount table is set up).
  const entered = await page.outcome('mt-out', 'Enter in the server field', () => page.keys('mt-server', '\uE007'));
  assert(entered.alert === null && typeof JSON.parse(entered.text).deadlineUs === 'number',
    `Enter in a field runs Mount, got: ${entered.text}`);
  const resolved = JSON.parse(await op(page, 'mt', 'resolve'));
  assert(resolved.servers[0]?.server === '/127.0.0.1:8101', 'resolve shows the mounted server');
  await page.shot('mounttable');
}

export async function after(cli) {
  const cells = await dump(cli, 'mounttable');
  assert(cells.some((c) => c.row_key.endsWith('/e2e/svc') && c.qualifier === '/127.0.0.1:8101'), 'mounttable has the e2e/svc mount');
}

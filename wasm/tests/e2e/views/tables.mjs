// Table browser: the four index rows of a triple written before the gateway started.
import { assert } from '../webdriver.mjs';

export async function populate(cli) {
  await cli(['graph', 'create', 'browse']);
  await cli(['graph', 'add', 'browse', '/u<joe> "parent_of"@[] /u<mary>']);
}

export async function check(page) {
  await page.js(`document.getElementById('browse-table').value = 'badwolf'`);
  await page.type('browse-prefix', 'browse:');
  await page.click('#browse-form button');
  await page.until(`return document.querySelector('#browse-out table') !== null`, 'the scan');
  const caption = await page.js(`return document.querySelector('#browse-out caption').textContent`);
  assert(caption === '4 row(s)', `the browser shows the triple's four index rows, got ${caption}`);
  await page.shot('tables');
}

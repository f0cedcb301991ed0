// Table browser: the eight index rows of two triples written before the gateway started, paged
// three at a time (each page starts after the previous page's last key), keys drawn as segments.
import { assert } from '../webdriver.mjs';

export async function populate(cli) {
  await cli(['graph', 'create', 'browse']);
  await cli(['graph', 'add', 'browse', '/u<joe> "parent_of"@[] /u<mary>', '/u<mary> "parent_of"@[] /u<ann>']);
}

/** The page on screen once it has changed: [caption, row keys, whether Next is enabled]. */
async function pageOnScreen(page, number, act) {
  await page.js(`document.getElementById('browse-out').textContent = ''`);
  await act();
  await page.until(`const o = document.getElementById('browse-out');
    return o.dataset.page === arguments[0] && o.querySelector('table') && !o.hasAttribute('aria-busy')`,
  `page ${number}`, String(number));
  return page.js(`return [document.querySelector('#browse-out caption').textContent,
    [...document.querySelectorAll('#browse-out tbody tr td:first-child')].map((td) => td.textContent),
    !document.getElementById('browse-next').disabled,
    document.querySelectorAll('#browse-out tbody tr td:first-child .segment[data-field="subject"]').length]`);
}

export async function check(page) {
  await page.type('browse-table', 'badwolf');
  await page.type('browse-prefix', 'browse:');
  await page.type('browse-limit', '3');
  const [cap1, keys1, more1, subjects] = await pageOnScreen(page, 1, () => page.click('#browse-form button#browse-scan'));
  assert(cap1 === '3 row(s) of badwolf, page 1, more follow' && keys1.length === 3 && more1,
    `page 1: ${cap1} ${JSON.stringify(keys1)}`);
  assert(subjects === 3, `each key is drawn as segments with its subject UUID, got ${subjects}`);
  await page.shot('tables');
  const [cap2, keys2, more2] = await pageOnScreen(page, 2, () => page.click('#browse-next'));
  assert(cap2 === '3 row(s) of badwolf, page 2, more follow' && more2, `page 2: ${cap2}`);
  const [cap3, keys3, more3] = await pageOnScreen(page, 3, () => page.click('#browse-next'));
  assert(cap3 === '2 row(s) of badwolf, page 3' && !more3, `page 3 is the last: ${cap3}`);
  const all = [...keys1, ...keys2, ...keys3];
  assert(all.every((k, i) => i === 0 || all[i - 1] < k), `pages continue after the last key, in order: ${JSON.stringify(all)}`);
  const [capBack, keysBack] = await pageOnScreen(page, 2, () => page.click('#browse-prev'));
  assert(capBack === cap2 && JSON.stringify(keysBack) === JSON.stringify(keys2), 'Previous shows page 2 again');
}

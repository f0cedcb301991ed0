// Key inspector: keys of two schemas decoded and drawn as their codec's segments.
import { assert } from '../webdriver.mjs';

export async function populate() {}

/** Decodes `key` in the view and returns the segments on screen: [field, text, title]. */
async function decode(page, key) {
  await page.type('key-input', key);
  await page.click('#key-form button');
  await page.until(`return document.querySelector('#key-out .segments') !== null
    && document.querySelector('#key-out caption')?.textContent.includes(arguments[0])`, `the decoded key ${key}`, '');
  return page.js(`return [...document.querySelectorAll('#key-out .segments .segment')]
    .map((s) => [s.dataset.field, s.textContent, s.title, getComputedStyle(s).backgroundColor])`);
}

export async function check(page) {
  const s3 = await decode(page, 'e2e-bucket\\x00\\x7fMphotos/cat.jpg');
  assert(JSON.stringify(s3.map((s) => s[0])) === '["collection","separator","kind prefix","object key"]',
    `an s3 master key's segments: ${JSON.stringify(s3)}`);
  assert(s3.map((s) => s[1]).join('') === 'e2e-bucket\\x00\\x7fMphotos/cat.jpg', `the segments spell the key: ${JSON.stringify(s3)}`);
  assert(s3[3][2].includes("the object's key") && s3[0][2].includes('bucket'), `each segment's title says what it means: ${s3[3][2]}`);
  assert(new Set(s3.filter((s) => s[0] !== 'separator').map((s) => s[3])).size === 3, 'the fields have distinct colours');
  const caption = await page.js(`return document.querySelector('#key-out table.fields > caption')?.textContent ?? null`);
  assert(caption === 'Row key decoded as s3 (master)', `the inspector's fields table has a caption, got ${caption}`);
  const legend = await page.js(`return [...document.querySelectorAll('#key-out table.legend tbody tr')].map((r) => r.dataset.field)`);
  assert(JSON.stringify(legend) === '["collection","kind prefix","object key"]', `the legend lists the fields: ${legend}`);
  await page.shot('keys');

  // A trace row of the trace store: shard, namespace, row type, tile key and subkey.
  const gold = await decode(page, '09:ts:t:2147483646:,0=1,1=3,3=0,');
  const fields = gold.filter((s) => s[0] !== 'separator').map((s) => `${s[0]}=${s[1]}`);
  assert(JSON.stringify(fields) === '["shard=09","namespace=ts","row type=t","tile key=2147483646","subkey=,0=1,1=3,3=0,"]',
    `a gold trace key's segments: ${JSON.stringify(fields)}`);
  await page.shot('keys-gold');
}

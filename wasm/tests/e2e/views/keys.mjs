// Key inspector: keys of two schemas decoded and drawn as their codec's segments, the key
// copied, a key no schema's layout fits answered as such, the key in the URL (deep link).
import { assert } from '../webdriver.mjs';

export async function populate() {}

/** Decodes `key` in the view and returns the segments on screen: [field, text, title]. */
async function decode(page, key) {
  await page.type('key-input', key);
  await page.click('#key-form button');
  await page.until(`return document.querySelector('#key-out .segments')?.textContent === arguments[0]
    && document.querySelector('#key-out table.fields > caption') !== null`, `the decoded key ${key}`, key);
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
  await page.axe('keys (a gold key)');

  // Copy key: the clipboard holds the key's text, and the page says so.
  await page.permit('clipboard-read');
  await page.permit('clipboard-write');
  await page.click('#key-out button.copy');
  const note = await page.until(`return document.querySelector('#key-out .copy-note')?.textContent`, 'the copy button\'s note');
  const copied = await page.jsAsync('const done = arguments[0]; navigator.clipboard.readText().then(done, (e) => done(`unreadable: ${e}`))');
  assert(note === 'copied' && copied === '09:ts:t:2147483646:,0=1,1=3,3=0,', `Copy key: ${note}, clipboard ${copied}`);

  // Bytes no schema's layout fits: said so, with the bytes as read, not as a tool failure.
  await page.type('key-input', '\\xff\\xfe');
  await page.click('#key-form button');
  const noFit = await page.until(`return document.querySelector('#key-out .no-fit')?.textContent`, 'the answer for a key no layout fits');
  assert(noFit.startsWith("No schema's row key layout fits this key.") && noFit.includes('\\xff\\xfe')
    && await page.js(`return document.querySelector('#key-out [role="alert"]') === null`), `no layout fits: ${noFit}`);
  await page.shot('keys-no-fit');
  await page.axe('keys (no layout fits)');
  // A malformed escape is bad input, said as an error.
  await page.type('key-input', '\\xZZ');
  const bad = await page.outcome('key-out', 'a malformed escape', () => page.click('#key-form button'));
  assert(bad.alert?.startsWith('invalid argument: '), `a malformed escape is refused: ${bad.text}`);
  await page.type('key-input', '\\xff\\xfe');
  // With a schema chosen, the answer names it.
  await page.select('#key-schema', 's3 (object metadata)');
  await page.click('#key-form button');
  await page.until(`return document.querySelector('#key-out .no-fit-title')?.textContent === 'This is not a s3 row key.'`, 'the s3 answer');

  // The key and schema are the URL's state: a reload decodes the same key again.
  const hash = await page.js('return location.hash');
  assert(hash === `#keys?${new URLSearchParams({ key: '\\xff\\xfe', schema: 's3' })}`, `the URL holds key and schema: ${hash}`);
}

/** The inspector needs no server: with an empty one selected it decodes as before. */
export async function setup(page) {
  await decode(page, 'e2e-bucket\\x00\\x7fMphotos/cat.jpg');
}

/** The inspector needs no server: with the gateway stopped it decodes as before. */
export async function offline(page) {
  await page.select('#key-schema', 'auto');
  const s3 = await decode(page, 'e2e-bucket\\x00\\x7fMphotos/cat.jpg');
  assert(s3.length === 4, `decoded without a server: ${JSON.stringify(s3)}`);
}

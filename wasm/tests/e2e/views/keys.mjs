// Key inspector: an s3 object key decoded into its fields.
import { assert } from '../webdriver.mjs';

export async function populate() {}

export async function check(page) {
  await page.type('key-input', 'e2e-bucket\\x00\\x7fMphotos/cat.jpg');
  await page.click('#key-form button');
  await page.until(`return document.querySelector('#key-out table') !== null`, 'the decoded key');
  const text = await page.js(`return document.getElementById('key-out').textContent`);
  assert(text.includes('photos/cat.jpg') && text.includes('s3'), `the inspector decodes an s3 key: ${text}`);
  const caption = await page.js(`return document.querySelector('#key-out table > caption')?.textContent ?? null`);
  assert(caption === 'Row key decoded as s3 (master)', `the inspector's table has a caption, got ${caption}`);
  await page.shot('keys');
}

// Object metadata view: create a bucket, put, list (grouped by the delimiter), check.
import { assert } from '../webdriver.mjs';
import { defaultButton, dump, op } from './panel.mjs';

export async function populate() {}

export async function check(page) {
  await defaultButton(page, 's3', 'put');
  await page.type('s3-bucket', 'e2e-bucket');
  await op(page, 's3', 'bucket');
  await op(page, 's3', 'put');
  const list = JSON.parse(await op(page, 's3', 'list'));
  assert(JSON.stringify(list.CommonPrefixes) === '["photos/"]', 'the listing groups photos/');
  const report = JSON.parse(await op(page, 's3', 'check'));
  assert(report.left === 0 && report.rows_scanned >= 2, `s3 check: ${JSON.stringify(report)}`);
  await page.shot('bucket');
}

export async function after(cli) {
  const cells = await dump(cli, 'objmeta');
  assert(cells.some((c) => c.row_key === 'e2e-bucket\\x00\\x7fMphotos/cat.jpg'), 'objmeta has the object row');
}

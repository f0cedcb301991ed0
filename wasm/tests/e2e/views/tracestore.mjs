// Trace store view: put a digest, read the tile back, check the table.
import { assert } from '../webdriver.mjs';
import { defaultButton, dump, op } from './panel.mjs';

export async function populate() {}

export async function check(page) {
  await defaultButton(page, 'gold', 'put');
  await page.type('gold-commit', '1000');
  await op(page, 'gold', 'put');
  const tile = JSON.parse(await op(page, 'gold', 'tile'));
  assert(tile.traces.some((t) => t.digest === '8db9913366b07bd14df9a68459e2958b'), 'the tile has the digest put');
  // The view's Check runs the schema's check machine over the gateway.
  const report = JSON.parse(await op(page, 'gold', 'check'));
  assert(report.schema === 'gold' && report.left === 0 && report.rows_scanned >= 2, `gold check: ${JSON.stringify(report)}`);
  await page.shot('tracestore');
}

export async function after(cli) {
  const cells = await dump(cli, 'gold');
  assert(cells.some((c) => c.value_hex === '8db9913366b07bd14df9a68459e2958b'), 'gold has the digest cell');
}

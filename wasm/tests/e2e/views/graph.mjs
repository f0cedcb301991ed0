// Triples view: create a graph, add a triple, query it, check.
import { assert } from '../webdriver.mjs';
import { defaultButton, dump, op } from './panel.mjs';

export async function populate() {}

export async function check(page) {
  await defaultButton(page, 'graph', 'add');
  await page.type('graph-id', 'e2e');
  await op(page, 'graph', 'create');
  await op(page, 'graph', 'add');
  const query = JSON.parse(await op(page, 'graph', 'query'));
  assert(query.length === 1, 'the graph has one triple');
  const report = JSON.parse(await op(page, 'graph', 'check'));
  assert(report.left === 0 && report.rows_scanned === 5,
    `graph check of e2e (its graph row and four index rows): ${JSON.stringify(report)}`);
  await page.shot('graph');
}

export async function after(cli) {
  const cells = await dump(cli, 'badwolf');
  assert(cells.filter((c) => c.row_key.startsWith('e2e:')).length === 4, 'badwolf has four index rows');
  assert(cells.some((c) => c.row_key === 'graph:e2e'), 'badwolf has the graph row');
}

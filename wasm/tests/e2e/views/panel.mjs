// Checks shared by the views that are operation panels (views/panel.js): a form
// `#<panel>-form` of operation buttons and an output `#<panel>-out`.
import { assert } from '../webdriver.mjs';

/** Clicks a panel's operation button and returns the output text; the operation must succeed. */
export async function op(page, panel, name) {
  const { text, alert } = await page.outcome(`${panel}-out`, `${panel} ${name}`,
    () => page.click(`#${panel}-form button[data-op="${name}"]`));
  assert(alert === null, `${panel} ${name} succeeded, got: ${text}`);
  return text;
}

/**
 * Enter in a field submits a form with its default button: in every panel that is the main
 * operation `main`, never Set up (a plain button, run only when clicked).
 */
export async function defaultButton(page, panel, main) {
  const [op, setup] = await page.js(`const f = document.getElementById(arguments[0]);
    return [f.querySelector('button:default')?.dataset.op ?? null, f.querySelector('button[data-op="setup"]').type];`,
  `${panel}-form`);
  assert(op === main && setup === 'button', `${panel}: default button ${op} (want ${main}), Set up is a ${setup}`);
}

/** The cells of `table` in the store (`rowkit admin dump --json`). */
export async function dump(cli, table) {
  const doc = JSON.parse(await cli(['--json', 'admin', 'dump', table]));
  return Object.values(doc).find(Array.isArray) ?? [];
}

// The offline pass shared by the views that read data and keep it on screen (e2e contract:
// `offline(page)` runs after the gateway was stopped).
import { OFFLINE_ERROR_MS, assert } from '../webdriver.mjs';

/**
 * Clicks `button` of the view `view` (the gateway is gone) and expects: an error (role=alert
 * inside `#out`) within OFFLINE_ERROR_MS; when `hadData`, the data still on screen marked out of date
 * (`data-stale` on the view's section, the notice `#staleId` shown); the header saying the
 * gateway cannot be reached. Takes a screenshot and runs axe. Resolves to the error's text.
 */
export async function offlineError(page, { view, button, out, staleId, hadData }) {
  // An earlier alert in `out` must not pass for this one (as webdriver.mjs's `outcome` does).
  await page.js(`document.getElementById(arguments[0]).textContent = ''`, out);
  const started = Date.now();
  await page.click(button);
  const alert = await page.waitFor(OFFLINE_ERROR_MS, `return document.querySelector('#' + arguments[0] + ' [role="alert"]')?.textContent`,
    `an error within OFFLINE_ERROR_MS of ${button}`, out);
  console.log(`e2e: ${view} offline: error after ${((Date.now() - started) / 1000).toFixed(1)} s: ${alert}`);
  if (hadData) {
    const stale = await page.js(`const notice = document.getElementById(arguments[1]);
      return [document.getElementById('view-' + arguments[0]).dataset.stale, notice.hidden, notice.textContent]`, view, staleId);
    assert(stale[0] === 'true' && !stale[1] && stale[2].startsWith('Out of date'), `${view}: the data shown is marked out of date: ${stale}`);
  }
  await page.waitFor(OFFLINE_ERROR_MS, `return /cannot reach/.test(document.getElementById('connection').textContent)`,
    'the header to say the gateway cannot be reached');
  await page.shot(`${view}-offline`);
  await page.axe(`${view} (server stopped)`);
  return alert;
}

// Checks shared by the views with forms, confirmations and URL state (bucket console, graph):
// the confirmation dialog, a field's error, the URL's state, and the offline and setup passes.
import { assert } from '../webdriver.mjs';

/** The view's state in the URL (`#<view>?<query>`) as an object. */
export const hashState = (page) => page.js(`return Object.fromEntries(new URLSearchParams(location.hash.split('?')[1] ?? ''))`);

/** The error next to the field `#id`: [its aria-invalid, the message] (the message null when none). */
export const fieldError = (page, id) => page.js(`const c = document.getElementById(arguments[0]);
  return [c.getAttribute('aria-invalid'), document.getElementById(arguments[0] + '-error')?.textContent ?? null]`, id);

/**
 * Clicks `opener`, waits for the confirmation dialog, checks it with axe (as `view`), presses
 * `button` (`confirm-ok` or `confirm-cancel`) and resolves to what the dialog said:
 * `{title, body, focused}` (`focused`: the id of the control focused when it opened).
 */
export async function confirmWith(page, view, opener, button) {
  await page.click(opener);
  await page.until(`return document.getElementById('confirm-dialog').open`, 'the confirmation dialog');
  const text = await page.js(`return { title: document.getElementById('confirm-title').textContent,
    body: document.getElementById('confirm-body').textContent, focused: document.activeElement.id }`);
  await page.axe(`${view}: the confirmation dialog`);
  await page.click(`#${button}`);
  await page.until(`return !document.getElementById('confirm-dialog').open`, 'the dialog to close');
  return text;
}

/**
 * The setup pass (an empty server): `first` (a button) shows in `#firstOut` the hint naming Set
 * up; `setup` says `done` in `#setupOut`; `first` then shows `after`.
 */
export async function setupCheck(page, view, { first, firstOut, setup, setupOut, done, after }) {
  const hint = await page.outcome(firstOut, `${view} on an empty store`, () => page.click(first));
  assert(hint.alert !== null && hint.alert.includes('Set up'), `${view}: an empty store says what to do: ${hint.text}`);
  await page.axe(`${view}: an empty store`);
  const made = await page.outcome(setupOut, `${view} set up`, () => page.click(setup));
  assert(made.alert === null && made.text === done, `${view} set up: ${made.text}`);
  const then = await page.outcome(firstOut, `${view} after set up`, () => page.click(first));
  assert(then.alert === null && then.text === after, `${view} after set up: ${then.text}`);
}

const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

/**
 * Real mouse input on the element `css` through WebDriver's Actions (a wheel turn, a drag), as
 * the browser gets it from a user: `wheel(deltaY)` scrolls over its centre, `drag(dx, dy)`
 * presses the left button 10 px inside its top left corner and moves by (dx, dy) before
 * releasing.
 */
export async function mouse(page, css) {
  const [session] = await page.call('GET', '/sessions');
  const actions = (list) => page.call('POST', `/session/${session.id}/actions`, { actions: list });
  const origin = { [ELEMENT]: await page.find(css) };
  const [w, h] = await page.js(`const r = document.querySelector(arguments[0]).getBoundingClientRect(); return [r.width, r.height]`, css);
  return {
    wheel: (deltaY) => actions([{ type: 'wheel', id: 'wheel', actions: [{ type: 'scroll', origin, x: 0, y: 0, deltaX: 0, deltaY }] }]),
    drag: (dx, dy) => actions([{ type: 'pointer', id: 'mouse', parameters: { pointerType: 'mouse' }, actions: [
      { type: 'pointerMove', duration: 0, origin, x: Math.round(-w / 2 + 10), y: Math.round(-h / 2 + 10) },
      { type: 'pointerDown', button: 0 },
      { type: 'pointerMove', duration: 100, origin: 'pointer', x: dx, y: dy },
      { type: 'pointerUp', button: 0 }] }]),
  };
}

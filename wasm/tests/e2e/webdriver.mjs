// WebDriver helpers of the browser tool's end-to-end test: chromedriver started on a free port,
// one headless Chromium session, and the few W3C WebDriver calls the view checks use (run a
// script, find, type, clear, click, choose an option, wait, screenshot, the browser's back
// button, axe-core), each throwing with what was expected.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/**
 * How long a view may take to show an error once its server is gone: the tool's per-operation
 * deadline (8 s, `deadlineMs` in app.js) plus room for a loaded machine. What matters is the
 * order of magnitude (a stopped server used to show nothing for 30-238 s); the e2e prints the
 * time each view took.
 */
export const OFFLINE_ERROR_MS = 15_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Throws `check failed: what` unless `cond`. */
export const assert = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`); };

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

/**
 * Starts chromedriver (CHROMEDRIVER, default `chromedriver`) and a headless Chromium session.
 * `children` collects the process so the runner can stop it; `width`×`height` is the window;
 * `axeScript` the path of axe-core's axe.min.js. Resolves to the session helpers.
 */
export async function openSession(children, { width = 1280, height = 1400, axeScript = process.env.ROWKIT_AXE_JS } = {}) {
  const port = await freePort();
  const driver = spawn(process.env.CHROMEDRIVER || 'chromedriver', [`--port=${port}`], { stdio: 'ignore' });
  children.push(driver);
  const wd = `http://127.0.0.1:${port}`;
  async function call(method, p, body) {
    for (let i = 0; ; i++) {
      try {
        const r = await fetch(wd + p, {
          method,
          headers: { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const j = await r.json();
        if (!r.ok) throw new Error(`${method} ${p}: ${JSON.stringify(j.value)}`);
        return j.value;
      } catch (e) {
        if (i > 50 || !String(e).includes('fetch failed')) throw e;
        await sleep(100); // chromedriver still starting
      }
    }
  }
  const session = await call('POST', '/session', {
    capabilities: { alwaysMatch: { browserName: 'chrome', 'goog:chromeOptions': {
      args: ['--headless=new', '--no-sandbox', '--disable-dev-shm-usage', `--window-size=${width},${height}`],
    } } },
  });
  const s = `/session/${session.sessionId}`;

  /** Runs `script` in the page (its `arguments` are `args`) and returns its result. */
  const js = (script, ...args) => call('POST', `${s}/execute/sync`, { script, args });
  /** Runs `script` as an async script (it ends by calling its last argument) and returns what it passed. */
  const jsAsync = (script, ...args) => call('POST', `${s}/execute/async`, { script, args });
  /** Grants (or denies) the page a permission, e.g. `clipboard-read` (WebDriver's Set Permission). */
  const permit = (name, state = 'granted') => call('POST', `${s}/permissions`, { descriptor: { name }, state });
  /** The WebDriver id of the first element matching `css`. */
  const find = async (css) => {
    const v = await call('POST', `${s}/element`, { using: 'css selector', value: css });
    const id = v[ELEMENT];
    if (!id) throw new Error(`no element id for ${css}: ${JSON.stringify(v)}`);
    return id;
  };
  /** Empties the field `#id` (WebDriver's element clear, as a user selecting and deleting). */
  const clear = async (id) => call('POST', `${s}/element/${await find(`#${id}`)}/clear`, {});
  /** Types `text` into the element `#id` after clearing it. */
  async function type(id, text) {
    const e = await find(`#${id}`);
    await call('POST', `${s}/element/${e}/clear`, {});
    await call('POST', `${s}/element/${e}/value`, { text });
  }
  /** Sends keys to `#id` without clearing it (`\uE007` is Enter). */
  const keys = async (id, text) => call('POST', `${s}/element/${await find(`#${id}`)}/value`, { text });
  /** Clicks the first element matching `css`. */
  const click = async (css) => call('POST', `${s}/element/${await find(css)}/click`, {});
  /**
   * Chooses the option whose text is `optionText` in the `<select>` matching `css` as a user
   * does: a click on the select, then a click on the option.
   */
  async function select(css, optionText) {
    const selectId = await find(css);
    await call('POST', `${s}/element/${selectId}/click`, {});
    const options = await call('POST', `${s}/element/${selectId}/elements`, { using: 'css selector', value: 'option' });
    const texts = [];
    for (const o of options) {
      const text = (await call('GET', `${s}/element/${o[ELEMENT]}/text`)).trim();
      if (text === optionText) {
        await call('POST', `${s}/element/${o[ELEMENT]}/click`, {});
        return;
      }
      texts.push(text);
    }
    throw new Error(`${css} has no option "${optionText}" (options: ${JSON.stringify(texts)})`);
  }
  /** Waits up to `ms` until `script` returns something truthy, and returns it. */
  async function waitFor(ms, script, what, ...args) {
    for (const end = Date.now() + ms; Date.now() < end;) {
      const v = await js(script, ...args);
      if (v) return v;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  }
  /** Waits up to 30 s until `script` returns something truthy, and returns it. */
  const until = (script, what, ...args) => waitFor(30_000, script, what, ...args);
  /**
   * Runs `act` (which starts something that writes to the element `#outId`) and returns the
   * output once it has changed and is no longer busy: its text and, for an error, the text of
   * its role="alert" element (an error, and only an error, is shown as an alert).
   */
  async function outcome(outId, what, act) {
    await js(`document.getElementById(arguments[0]).textContent = ''`, outId);
    await act();
    await until(`const o = document.getElementById(arguments[0]);
      return o.textContent !== '' && !o.hasAttribute('aria-busy');`, what, outId);
    const [text, failed, alert] = await js(`const o = document.getElementById(arguments[0]);
      return [o.textContent, o.querySelector('.error') !== null, o.querySelector('[role="alert"]')?.textContent ?? null];`, outId);
    assert(failed === (alert !== null), `${what}: an error (and only an error) is shown as an alert`);
    return { text, alert };
  }
  /** Writes a PNG of the element matching `css` (scrolled to the top of the viewport) to `file`. */
  async function screenshot(css, file) {
    // Top-aligned first: chromedriver's own scrolling can leave an element cut at the viewport's edge.
    await js(`document.querySelector(arguments[0]).scrollIntoView({ block: 'start' })`, css);
    const png = await call('GET', `${s}/element/${await find(css)}/screenshot`);
    fs.writeFileSync(file, Buffer.from(png, 'base64'));
  }
  /** Moves the mouse to (`x`, `y`) CSS pixels from the top left corner of the element `css`. */
  async function pointAt(css, x, y) {
    const [w, h] = await js(`const r = document.querySelector(arguments[0]).getBoundingClientRect(); return [r.width, r.height]`, css);
    // W3C actions measure from the element's centre.
    const origin = { [ELEMENT]: await find(css) };
    await call('POST', `${s}/actions`, { actions: [{ type: 'pointer', id: 'mouse', parameters: { pointerType: 'mouse' },
      actions: [{ type: 'pointerMove', duration: 0, origin, x: Math.round(x - w / 2), y: Math.round(y - h / 2) }] }] });
  }
  /** Loads `url` in the session's tab. */
  const navigate = (url) => call('POST', `${s}/url`, { url });
  /** The browser's Back button (WebDriver's Back command, not a script's history.back()). */
  const back = () => call('POST', `${s}/back`, {});
  /** The browser's Forward button. */
  const forward = () => call('POST', `${s}/forward`, {});
  /** Sets the window's outer size in CSS pixels. */
  const resize = (width, height) => call('POST', `${s}/window/rect`, { width, height });
  /** The browser's Reload button. */
  const reload = () => call('POST', `${s}/refresh`, {});
  /**
   * Runs axe-core (its script injected from `axeScript`, the path of axe.min.js, once per page
   * load) on the whole page and throws unless it finds no serious or critical violation; the
   * message lists each (rule, element, summary). `name` says which state of which view it is.
   * Resolves to the number of lesser (moderate, minor) violations.
   */
  let axeSource = null;
  async function axe(name) {
    if (!axeScript) throw new Error('axe: no axe-core script (ROWKIT_AXE_JS)');
    axeSource ??= fs.readFileSync(axeScript, 'utf8');
    if (!(await js('return typeof window.axe === "object"'))) await js(`${axeSource}\nreturn true;`);
    const result = await call('POST', `${s}/execute/async`, {
      script: `const done = arguments[arguments.length - 1];
        window.axe.run(document, { resultTypes: ['violations'] })
          .then((r) => done({ violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary })) })) }))
          .catch((e) => done({ error: String(e) }));`,
      args: [],
    });
    if (result.error) throw new Error(`axe ${name}: ${result.error}`);
    const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    if (bad.length) {
      const lines = bad.flatMap((v) => v.nodes.map((n) => `  ${v.impact} ${v.id} (${v.help}) at ${n.target}: ${n.summary.replace(/\s+/g, ' ')}`));
      throw new Error(`check failed: axe-core in ${name}: ${bad.length} serious or critical violation(s):\n${lines.join('\n')}`);
    }
    const lesser = result.violations.length;
    console.log(`e2e: axe ${name}: no serious or critical violation${lesser ? ` (${lesser} lesser: ${result.violations.map((v) => v.id).join(', ')})` : ''}`);
    return lesser;
  }
  /** Ends the session (errors ignored: the browser may be gone). */
  const close = () => call('DELETE', s).catch(() => {});
  return { call, js, jsAsync, permit, find, type, clear, keys, click, select, until, waitFor, outcome, screenshot, pointAt, navigate, back, forward, reload, resize, axe, close };
}

// A pass-through HTTP proxy in front of the real gateway that lets the wasm tests observe, from
// outside the driver and without timing thresholds, what the fetch driver does on the wire
// (rest-json.md 8). Requests under a test-chosen group go to the gateway unchanged (preflights
// included, so CORS is the gateway's own); the proxy only delays them and records what it saw,
// CORS preflights (OPTIONS) included: what they asked for and what the gateway answered.
//
//   /observe/GROUP/v2/...    passed through at once.
//   /barrier/N/GROUP/v2/...  data requests of GROUP are held until N of them are open at once,
//                            then all go on. Reaching N proves the driver had N requests in
//                            flight together: none of them was answered before the Nth arrived.
//   /hold-end/GROUP/v2/...   the response body goes through except its last byte (the `]` of a
//                            streamed array), which is sent only after GET /release/GROUP. A
//                            client that waits for the whole body before handing rows over can
//                            never ask for the release.
//   /release/GROUP           releases GROUP's held body end.
//   /stats/GROUP             what the proxy recorded for GROUP, as JSON.
//
// A group that never gets what it waits for is let go after FALLBACK_MS and marked `fallback`,
// so a failing driver ends in a clear assertion rather than a hung test. Passing runs never
// reach it: the release they wait for is caused by the driver itself.
//
// Usage: node observe-proxy.mjs GATEWAY_URL   (prints http://127.0.0.1:PORT on stdout)
// The harness runs one in front of each of its gateways.
import http from 'node:http';

const upstream = new URL(process.argv[2] ?? '');
const FALLBACK_MS = 30_000;
const cors = { 'access-control-allow-origin': '*' };
const groups = new Map();

function group(name) {
  if (!groups.has(name)) {
    groups.set(name, {
      stats: {
        requests: 0, open: 0, maxOpen: 0, released: null, bodyChunks: 0, endSent: null, preflights: [],
      },
      held: [],
      waitingEnd: [],
      timer: null,
    });
  }
  return groups.get(name);
}

// Forwards `req` (path `path`) to the gateway; `onBody(res, upstreamRes)` streams the answer.
function forward(req, res, path, onBody) {
  const headers = { ...req.headers, host: upstream.host };
  const up = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path, headers }, (ur) => {
    const out = { ...ur.headers };
    delete out['content-length'];
    res.writeHead(ur.statusCode, out);
    onBody(ur);
  });
  up.on('error', (e) => { res.destroy(e); });
  req.pipe(up);
}

// Passes a CORS preflight through, recording the headers asked for and the gateway's answer.
function preflight(req, res, g, path) {
  forward(req, res, path, (ur) => {
    g.stats.preflights.push({
      method: req.headers['access-control-request-method'] ?? null,
      requestHeaders: req.headers['access-control-request-headers'] ?? null,
      authorization: 'authorization' in req.headers,
      status: ur.statusCode,
      allowOrigin: ur.headers['access-control-allow-origin'] ?? null,
      allowHeaders: ur.headers['access-control-allow-headers'] ?? null,
    });
    ur.pipe(res);
  });
}

function releaseBarrier(g, how) {
  if (g.stats.released) return;
  g.stats.released = how;
  clearTimeout(g.timer);
  for (const go of g.held.splice(0)) go();
}

function barrier(req, res, n, g, path) {
  const s = g.stats;
  s.requests += 1;
  s.open += 1;
  s.maxOpen = Math.max(s.maxOpen, s.open);
  let closed = false;
  const close = () => { if (!closed) { closed = true; s.open -= 1; } };
  res.on('close', close);
  const go = () => forward(req, res, path, (ur) => ur.pipe(res));
  if (s.released) {
    go();
    return;
  }
  g.held.push(go);
  if (!g.timer) g.timer = setTimeout(() => releaseBarrier(g, 'fallback'), FALLBACK_MS);
  if (s.open >= n) releaseBarrier(g, 'barrier');
}

function holdEnd(req, res, g, path) {
  g.stats.requests += 1;
  forward(req, res, path, (ur) => {
    let last = null;
    ur.on('data', (chunk) => {
      if (last !== null) res.write(last);
      if (chunk.length > 1) res.write(chunk.subarray(0, chunk.length - 1));
      last = chunk.subarray(chunk.length - 1);
      g.stats.bodyChunks += 1;
    });
    ur.on('end', () => {
      const finish = (how) => {
        g.stats.endSent = how;
        res.end(last ?? undefined);
      };
      if (g.stats.released) {
        finish(`after release by ${g.stats.released}`);
        return;
      }
      const timer = setTimeout(() => {
        g.stats.released = 'fallback';
        finish('after release by fallback');
      }, FALLBACK_MS);
      g.waitingEnd.push(() => { clearTimeout(timer); finish('after release by client'); });
    });
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const parts = url.pathname.split('/');
  // parts[0] is '' (the path starts with '/').
  const rest = (from) => '/' + parts.slice(from).join('/') + url.search;
  if (parts[1] === 'stats' && parts[2]) {
    res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify(group(parts[2]).stats));
  } else if (parts[1] === 'release' && parts[2]) {
    const g = group(parts[2]);
    if (!g.stats.released) g.stats.released = 'client';
    for (const f of g.waitingEnd.splice(0)) f();
    res.writeHead(204, cors).end();
  } else if (parts[1] === 'observe' && parts[2] && parts[3] === 'v2') {
    const g = group(parts[2]);
    if (req.method === 'OPTIONS') preflight(req, res, g, rest(3));
    else {
      g.stats.requests += 1;
      forward(req, res, rest(3), (ur) => ur.pipe(res));
    }
  } else if (parts[1] === 'barrier' && /^\d+$/.test(parts[2] ?? '') && parts[3] && parts[4] === 'v2') {
    const g = group(parts[3]);
    if (req.method === 'OPTIONS') preflight(req, res, g, rest(4));
    else barrier(req, res, Number(parts[2]), g, rest(4));
  } else if (parts[1] === 'hold-end' && parts[2] && parts[3] === 'v2') {
    const g = group(parts[2]);
    if (req.method === 'OPTIONS') preflight(req, res, g, rest(3));
    else holdEnd(req, res, g, rest(3));
  } else {
    res.writeHead(404, cors).end();
  }
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});

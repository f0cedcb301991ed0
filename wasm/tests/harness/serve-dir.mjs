// Serves one directory read-only over HTTP on 127.0.0.1 (a free port), with
// `Access-Control-Allow-Origin: *` so the wasm tests running on the test runner's origin (or in
// Node) can fetch the shared vectors at run time, and pages (the npm package test's bundle).
// Prints the base URL on stdout's first line.
// Usage: node serve-dir.mjs DIR
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const root = fs.realpathSync(process.argv[2] ?? '.');
// A browser runs a module script only with a JavaScript type, and compiles wasm while it
// downloads only with application/wasm (the npm package test serves a page from here).
const TYPES = {
  '.json': 'application/json',
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.wasm': 'application/wasm',
};
const server = http.createServer((req, res) => {
  const cors = { 'access-control-allow-origin': '*' };
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const file = path.resolve(root, '.' + rel);
  if (req.method !== 'GET' || !(file === root || file.startsWith(root + path.sep))) {
    res.writeHead(404, cors).end();
    return;
  }
  fs.readFile(file, (err, data) => {
    if (err) {
      res.writeHead(404, cors).end();
    } else {
      const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
      res.writeHead(200, { ...cors, 'content-type': type }).end(data);
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});

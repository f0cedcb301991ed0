// Serves one directory read-only over HTTP on 127.0.0.1 (a free port), with
// `Access-Control-Allow-Origin: *` so the wasm tests running on the test runner's origin (or in
// Node) can fetch the shared vectors at run time. Prints the base URL on stdout's first line.
// Usage: node serve-dir.mjs DIR
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const root = fs.realpathSync(process.argv[2] ?? '.');
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
      const type = file.endsWith('.json') ? 'application/json' : 'application/octet-stream';
      res.writeHead(200, { ...cors, 'content-type': type }).end(data);
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});

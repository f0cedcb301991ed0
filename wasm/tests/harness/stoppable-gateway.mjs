// A real `rowkit serve` (on a memory store) that the wasm tests can stop mid-session, and a
// loopback port nothing listens on: what the clients' per-call deadline is tested against.
//
//   GET CONTROL/start  starts the gateway (on a fresh memory store, on the same port as the
//                      first one) unless it runs, and answers once it serves.
//   GET CONTROL/stop   kills the gateway (SIGKILL, as a crash or a pulled plug: its port is
//                      closed at once) and answers once it has exited.
//
// Usage: node stoppable-gateway.mjs ROWKIT
// Prints `gateway http://127.0.0.1:P`, `control http://127.0.0.1:Q` and
// `closed http://127.0.0.1:R`, one a line, once the gateway answers.
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';

const rowkit = process.argv[2];
const env = { ...process.env };
delete env.ROWKIT_GATEWAY_TOKEN;
let gateway = null;
let exited = true;

// Starts `rowkit serve` on `listen`; resolves to its URL once it prints its address.
function startGateway(listen) {
  const child = spawn(rowkit, ['--store', 'memory:', 'serve', '--listen', listen], {
    env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  gateway = child;
  exited = false;
  child.on('exit', () => { if (gateway === child) exited = true; });
  return new Promise((resolve, reject) => {
    let seen = '';
    const look = (chunk) => {
      seen += chunk;
      const m = seen.match(/127\.0\.0\.1:[0-9]+/);
      if (m) resolve(`http://${m[0]}`);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => reject(new Error(`rowkit serve exited (${code}): ${seen}`)));
  });
}

const address = await startGateway('127.0.0.1:0');
const listen = new URL(address).host;

// A port that was free a moment ago and that nothing here listens on.
const closed = await new Promise((resolve) => {
  const probe = net.createServer();
  probe.listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(`http://127.0.0.1:${port}`));
  });
});

const control = http.createServer((req, res) => {
  const headers = { 'access-control-allow-origin': '*', 'content-type': 'text/plain' };
  const answer = (status, text) => res.writeHead(status, headers).end(text);
  if (req.url === '/start') {
    if (!exited) {
      answer(200, 'running');
      return;
    }
    startGateway(listen).then(() => answer(200, 'started'), (e) => answer(500, String(e)));
  } else if (req.url === '/stop') {
    if (exited) {
      answer(200, 'stopped');
      return;
    }
    gateway.once('exit', () => answer(200, 'stopped'));
    gateway.kill('SIGKILL');
  } else {
    answer(404, 'unknown');
  }
});
control.listen(0, '127.0.0.1', () => {
  console.log(`gateway ${address}`);
  console.log(`control http://127.0.0.1:${control.address().port}`);
  console.log(`closed ${closed}`);
});

const stop = () => {
  if (!exited) gateway.kill('SIGKILL');
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

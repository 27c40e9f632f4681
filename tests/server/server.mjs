// Starts and stops `tessera serve` for the node tests.
//
// TESSERA_BIN: the tessera binary (required). TESSERA_SHARED: the shared folder with
// models/ (default: ../shared next to the repository). TESSERA_TEST_OUT: where server
// logs go (default: a temporary folder).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..');
export const sharedDir = path.resolve(repoRoot, process.env.TESSERA_SHARED || '../shared');
export const modelPath = path.join(sharedDir, 'models', 'stories260K.gguf');
export const outDir = process.env.TESSERA_TEST_OUT ||
  fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-node-'));
fs.mkdirSync(outDir, { recursive: true });

const LISTENING = /tessera serve: listening on (http:\/\/127\.0\.0\.1:(\d+))/;
const running = new Set();

// A server killed on the way out, whatever happens to the test process.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of running) child.kill('SIGKILL');
    process.exit(1);
  });
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/// Starts `tessera serve -m stories260K --port 0 -t 1 ...args`, waits for the listening
/// line and GET /health 200. Returns { url, port, child, log(), stop() }.
export async function startServer(name, args = [], { readyTimeoutMs = 60000 } = {}) {
  const bin = process.env.TESSERA_BIN;
  if (!bin) throw new Error('TESSERA_BIN is not set (the tessera binary to test)');
  if (!fs.existsSync(modelPath)) throw new Error(`model missing: ${modelPath}`);
  const argv = ['serve', '-m', modelPath, '--port', '0', '-t', '1', ...args];
  const logFile = path.join(outDir, `server-${name}.log`);
  const logStream = fs.createWriteStream(logFile);
  logStream.write(`$ ${bin} ${argv.join(' ')}\n`);
  const child = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stderr = '';
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
    child.on('error', (err) => {
      running.delete(child);
      resolve({ code: null, signal: null, error: err });
    });
  });
  child.stdout.on('data', (d) => logStream.write(d));
  const listening = new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      logStream.write(d);
      stderr += d.toString();
      const m = LISTENING.exec(stderr);
      if (m) resolve({ url: m[1], port: Number(m[2]) });
    });
    exited.then((r) => reject(new Error(
      `${name}: the server exited (${JSON.stringify(r)}) before listening:\n${stderr.slice(-2000)}`)));
  });

  let stopped = null;
  const server = {
    name,
    child,
    logFile,
    log: () => stderr,
    exited,
    /// SIGTERM, then wait (SIGKILL after `ms`). Resolves to { code, signal }.
    stop: (ms = 20000) => {
      if (!stopped) {
        stopped = (async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          try {
            return await withTimeout(exited, ms, `${name}: exit after SIGTERM`);
          } catch (e) {
            child.kill('SIGKILL');
            await exited;
            return { code: null, signal: 'SIGKILL', error: e.message };
          } finally {
            logStream.end();
          }
        })();
      }
      return stopped;
    },
  };

  try {
    const { url, port } = await withTimeout(listening, readyTimeoutMs, `${name}: listening line`);
    server.url = url;
    server.port = port;
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      let status = 0;
      try {
        status = (await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) })).status;
      } catch { /* not answering yet */ }
      if (status === 200) break;
      if (status !== 0 && status !== 503) throw new Error(`${name}: GET /health answered ${status}`);
      if (child.exitCode !== null) throw new Error(`${name}: the server exited while loading`);
      if (Date.now() > deadline) throw new Error(`${name}: /health not 200 after ${readyTimeoutMs} ms`);
      await sleep(50);
    }
  } catch (e) {
    await server.stop(5000);
    throw new Error(`${e.message}\n--- server log (${logFile}) ---\n${stderr.slice(-3000)}`);
  }
  return server;
}

// tests/server/harness.mjs — what every `gufo serve` test file shares: starting
// and stopping a server on a free port, the official `openai` client, raw
// POSTs, the OpenAI error-object check, and the group runner (exit 0 pass,
// 1 fail, 77 skip). Environment: GUFO_BIN, GUFO_MODEL (see server_test.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const here = dirname(fileURLToPath(import.meta.url));
export const clientDir = join(here, 'client');
if (!existsSync(join(clientDir, 'node_modules', 'openai'))) {
  console.log('SKIP: tests/server/client/node_modules is missing (run npm ci there)');
  process.exit(77);
}
export const { default: OpenAI } = await import(join(clientDir, 'node_modules', 'openai', 'index.mjs'));

export const BIN = process.env.GUFO_BIN;
export const MODEL = process.env.GUFO_MODEL;
if (!BIN || !MODEL) {
  console.error('GUFO_BIN and GUFO_MODEL must be set');
  process.exit(1);
}
if (!existsSync(MODEL)) {
  console.log(`SKIP: ${MODEL} is missing`);
  process.exit(77);
}

const servers = new Set();

// Starts `gufo serve` (on GUFO_MODEL unless `model` names another file) and resolves once it prints its serving line.
export function startServer(extra = [], model = MODEL) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['serve', '--model', model, '--port', '0', ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    servers.add(child);
    let out = '';
    const server = { child, stderr: '', exited: null };
    child.stderr.on('data', (d) => { server.stderr += d; });
    child.on('exit', (code, signal) => { server.exited = { code, signal }; servers.delete(child); });
    const timer = setTimeout(() => reject(new Error(`server did not start in 60 s\n${server.stderr}`)), 60000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/on http:\/\/[^\s]+:(\d+)\/v1/);
      if (m) {
        clearTimeout(timer);
        server.port = Number(m[1]);
        server.base = `http://127.0.0.1:${server.port}`;
        resolve(server);
      }
    });
    child.on('exit', () => { clearTimeout(timer); if (!server.port) reject(new Error(`server exited at start:\n${server.stderr}`)); });
  });
}

// SIGTERM (or `signal`), then wait; returns the exit status. A server that hangs is killed and the test fails.
export async function stopServer(server, signal = 'SIGTERM') {
  if (server.exited) return server.exited;
  const done = new Promise((r) => server.child.once('exit', (code, signal) => r({ code, signal })));
  server.child.kill(signal);
  const timeout = new Promise((r) => setTimeout(() => r(null), 20000));
  const result = await Promise.race([done, timeout]);
  if (!result) {
    server.child.kill('SIGKILL');
    throw new Error(`server did not stop within 20 s of ${signal}`);
  }
  return result;
}

export function killAll() {
  for (const child of servers) child.kill('SIGKILL');
}
process.on('exit', killAll);

export function client(server, apiKey = 'unused') {
  return new OpenAI({ baseURL: `${server.base}/v1`, apiKey, maxRetries: 0, timeout: 60000 });
}

export async function post(server, path, body, headers = {}) {
  const res = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* checked by the caller */ }
  return { status: res.status, json, text };
}

export function assertErrorObject(r, status, what) {
  assert.equal(r.status, status, `${what}: status ${r.status}, body ${r.text}`);
  assert.ok(r.json && r.json.error, `${what}: no error object in ${r.text}`);
  assert.equal(typeof r.json.error.message, 'string', `${what}: error.message`);
  assert.ok(r.json.error.message.length > 0, `${what}: empty error.message`);
  assert.equal(typeof r.json.error.type, 'string', `${what}: error.type`);
  assert.ok('param' in r.json.error && 'code' in r.json.error, `${what}: error.param / error.code`);
}

export const MODEL_ID = MODEL.replace(/^.*\//, '').replace(/\.gguf$/, '');
export const MESSAGES = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Name three colours.' }];

export async function streamText(openai, params) {
  const stream = await openai.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let role = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, role };
}

// Runs the group named by argv[2]; a group that takes longer than watchdogSeconds fails.
export async function runGroups(file, groups, watchdogSeconds = 240) {
  const name = process.argv[2];
  if (!groups[name]) {
    console.error(`usage: node ${file} ${Object.keys(groups).join('|')}`);
    process.exit(2);
  }
  const watchdog = setTimeout(() => { console.error(`FAIL: ${name} took over ${watchdogSeconds} s`); killAll(); process.exit(1); },
    watchdogSeconds * 1000);
  try {
    await groups[name]();
    console.log(`PASS: ${name}`);
    clearTimeout(watchdog);
    process.exit(0);
  } catch (e) {
    if (/provider found for model architecture/.test(String(e.message))) {
      console.log(`SKIP: no built provider serves ${MODEL}:\n${e.message}`);
      killAll();
      process.exit(77);
    }
    console.error(`FAIL: ${name}: ${e.stack || e}`);
    killAll();
    process.exit(1);
  }
}

// GET /metrics (Prometheus text format 0.0.4) parsed into
// { samples: [{name, labels: {..}, value}], types: {name: type}, help: {name: text}, text }.
export async function scrapeMetrics(server, headers = {}) {
  const res = await fetch(`${server.base}/metrics`, { headers });
  const text = await res.text();
  assert.equal(res.status, 200, `GET /metrics: ${res.status} ${text}`);
  assert.match(res.headers.get('content-type') || '', /^text\/plain; version=0\.0\.4/);
  const samples = [];
  const types = {};
  const help = {};
  for (const line of text.split('\n')) {
    if (!line) continue;
    let m = line.match(/^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/);
    if (m) {
      (m[1] === 'HELP' ? help : types)[m[2]] = m[3];
      continue;
    }
    assert.ok(!line.startsWith('#'), `unexpected comment line: ${line}`);
    m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/);
    assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
    const labels = {};
    if (m[3]) {
      for (const part of m[3].match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) || []) {
        const eq = part.indexOf('=');
        labels[part.slice(0, eq)] = JSON.parse(part.slice(eq + 1));
      }
    }
    const value = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : Number(m[4]);
    assert.ok(!Number.isNaN(value) || m[4] === 'NaN', `bad value in ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return { samples, types, help, text };
}

// The sum of the samples named `name` whose labels include `labels` (0 when none).
export function metricValue(metrics, name, labels = {}) {
  let sum = 0;
  for (const s of metrics.samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

// tests/server/step_overhead.mjs — per-step host overhead of `gufo serve`,
// measured inside the server: how long each decode step spends in the core
// (scheduling, sampler bookkeeping, detokenizing, stop strings, publishing
// text) against the provider's decode() call, from /metrics.
//
//   GUFO_BIN=build/host/gufo GUFO_MODEL=model.gguf node tests/server/step_overhead.mjs run
//
// Optional environment: GUFO_OVERHEAD_CLIENTS (default 8; also --sessions),
// GUFO_OVERHEAD_TOKENS (per request, default 64), GUFO_OVERHEAD_SECONDS
// (default 10), GUFO_OVERHEAD_ARGS (more serve options, space-separated,
// e.g. "--threads 4"). Clients stream greedy completions back to back, so
// every decode step batches about CLIENTS sessions. Prints one line per
// figure; exits 1 when the server's counters are inconsistent (no steps, no
// time), never on the ratio itself (it depends on the model's step time).
import assert from 'node:assert/strict';
import { MODEL_ID, startServer, stopServer, client, runGroups, scrapeMetrics, metricValue } from './harness.mjs';

const CLIENTS = Number(process.env.GUFO_OVERHEAD_CLIENTS || 8);
const TOKENS = Number(process.env.GUFO_OVERHEAD_TOKENS || 64);
const SECONDS = Number(process.env.GUFO_OVERHEAD_SECONDS || 10);
const EXTRA = (process.env.GUFO_OVERHEAD_ARGS || '').split(' ').filter(Boolean);

async function groupRun() {
  const server = await startServer(['--sessions', String(CLIENTS), '--cache-sessions', '0', ...EXTRA]);
  try {
    const openai = client(server);
    const before = await scrapeMetrics(server);
    const until = Date.now() + SECONDS * 1000;
    let requests = 0;
    await Promise.all(Array.from({ length: CLIENTS }, async (_, id) => {
      for (let n = 0; Date.now() < until; n++) {
        const stream = await openai.completions.create({ model: MODEL_ID, prompt: `Stream ${id}, request ${n}:`,
          max_tokens: TOKENS, temperature: 0, stream: true });
        for await (const chunk of stream) void chunk;
        requests++;
      }
    }));
    const after = await scrapeMetrics(server);
    const d = (name) => metricValue(after, name) - metricValue(before, name);
    const steps = d('gufo_decode_steps_total');
    const sessions = d('gufo_decode_step_sessions_total');
    const core = d('gufo_decode_core_seconds_total');
    const provider = d('gufo_decode_provider_seconds_total');
    assert.ok(steps > 0 && provider > 0 && core > 0, `no decode steps measured:\n${after.text}`);
    console.log(`model: ${MODEL_ID}; ${CLIENTS} clients, ${TOKENS} tokens per request, ${requests} requests in ${SECONDS} s`);
    console.log(`decode steps: ${steps}, ${(sessions / steps).toFixed(2)} sessions per step`);
    console.log(`provider decode(): ${(1e6 * provider / steps).toFixed(1)} us per step`);
    console.log(`core around it:    ${(1e6 * core / steps).toFixed(1)} us per step ` +
      `(${(1e6 * core / sessions).toFixed(2)} us per session per step)`);
    console.log(`core / provider:   ${(100 * core / provider).toFixed(2)} %`);
  } finally {
    const st = await stopServer(server);
    assert.equal(st.code, 0, server.stderr);
  }
}

await runGroups('step_overhead.mjs', { run: groupRun }, SECONDS + 180);

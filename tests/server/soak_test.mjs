// tests/server/soak_test.mjs — `gufo serve` under sustained load (issue 4, "Load").
//
//   node soak_test.mjs soak
//
// 64 streaming clients talk to one server for GUFO_SOAK_SECONDS (default 60)
// in two equal rounds; a quarter of their requests hang up at a random point
// mid-stream. Checked: nothing crashes, every stream that was not abandoned
// ends with a finish_reason and [DONE], /metrics shows no request, queue entry
// or session left once the load stops, resident memory after the second round
// is within a small bound of after the first (memory is flat: no leak per
// request), and SIGTERM ends the server with status 0 and no sanitizer report.
// Prints the figures (requests, aborts, tokens/s, RSS) for the issue's notes.
// Environment and exit codes as server_test.mjs (harness.mjs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  MODEL_ID, startServer, stopServer, client, runGroups, scrapeMetrics, metricValue,
} from './harness.mjs';

const SECONDS = Number(process.env.GUFO_SOAK_SECONDS || 60);
const CLIENTS = 64;
const ABORT_SHARE = 0.25;
// Growth of resident memory from the first round's end to the second's that
// still counts as flat: allocator arenas and caches settle in the first round,
// so a real per-request leak over thousands of requests shows well above this.
const RSS_SLACK_BYTES = 8 * 1024 * 1024;
const RSS_SLACK_SHARE = 0.05;
// A sanitizer's allocator keeps freed blocks in quarantines (one per thread,
// and connection threads come and go) and its own metadata, so its resident
// memory settles slowly; there the bound only catches gross growth, and
// LeakSanitizer at exit is the leak check.
const RSS_SLACK_SANITIZED_BYTES = 48 * 1024 * 1024;

function sanitized(pid) {
  return /lib(asan|tsan|ubsan)/.test(readFileSync(`/proc/${pid}/maps`, 'utf8'));
}

function residentBytes(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Number(m[1]) * 1024 : 0;
}

const mib = (b) => (b / 1048576).toFixed(1);

// A deterministic generator per client, so a failing run can be repeated
// (xorshift32; the seed is scrambled so neighbouring clients' draws differ).
function rng(seed) {
  let s = (Math.imul(seed + 1, 2654435761) >>> 0) || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

// One client: streams requests back to back until `until`, hanging up on a
// quarter of them after a random number of chunks.
async function runClient(openai, id, until, totals) {
  const rand = rng(1000 + id);
  let n = 0;
  while (Date.now() < until) {
    n++;
    const abortAt = rand() < ABORT_SHARE ? 1 + Math.floor(rand() * 12) : -1;
    const controller = new AbortController();
    const chat = rand() < 0.7;
    const params = { model: MODEL_ID, stream: true, stream_options: { include_usage: true },
      max_tokens: 8 + Math.floor(rand() * 120), temperature: rand() < 0.5 ? 0 : 0.9, seed: id * 1000 + n };
    let chunks = 0;
    let finish = null;
    let usage = null;
    try {
      const stream = chat
        ? await openai.chat.completions.create({ ...params,
          messages: [{ role: 'user', content: `client ${id} request ${n}: say something` }] },
        { signal: controller.signal })
        : await openai.completions.create({ ...params, prompt: `Client ${id}, request ${n}:` },
          { signal: controller.signal });
      for await (const chunk of stream) {
        chunks++;
        if (chunk.usage) usage = chunk.usage;
        if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
        if (chunks === abortAt) {
          controller.abort();
          break;
        }
      }
    } catch (e) {
      if (!controller.signal.aborted) throw new Error(`client ${id} request ${n}: ${e.message}`);
    }
    if (controller.signal.aborted) {
      totals.aborted++;
      totals.abortedChunks += chunks;
      continue;
    }
    // Not abandoned: it must have ended properly (finish_reason, usage, [DONE] closes the iterator).
    assert.ok(finish === 'stop' || finish === 'length', `client ${id} request ${n} ended with ${finish}`);
    assert.ok(usage, `client ${id} request ${n}: no usage chunk`);
    totals.completed++;
    totals.tokens += usage.completion_tokens;
  }
}

// Waits until /metrics shows nothing running (aborted streams are noticed
// within a wait slice, so allow a moment) and returns that scrape.
async function quiescent(server) {
  const t0 = Date.now();
  for (;;) {
    const m = await scrapeMetrics(server);
    const busy = metricValue(m, 'gufo_active_sessions') + metricValue(m, 'gufo_queued_requests') +
      metricValue(m, 'gufo_http_requests_in_flight') - 1; // this scrape
    if (busy === 0) return m;
    if (Date.now() - t0 > 10000) {
      assert.fail(`10 s after the load stopped: ${metricValue(m, 'gufo_active_sessions')} active sessions, ` +
        `${metricValue(m, 'gufo_queued_requests')} queued, ${metricValue(m, 'gufo_http_requests_in_flight')} in flight`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function round(server, seconds) {
  const totals = { completed: 0, aborted: 0, tokens: 0, abortedChunks: 0 };
  const until = Date.now() + seconds * 1000;
  const t0 = Date.now();
  // Each client its own client object: its own connection pool, as separate processes would have.
  await Promise.all(Array.from({ length: CLIENTS }, (_, id) => runClient(client(server), id, until, totals)));
  totals.seconds = (Date.now() - t0) / 1000;
  totals.metrics = await quiescent(server);
  totals.rss = residentBytes(server.child.pid);
  return totals;
}

async function groupSoak() {
  // Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
  // default) before reuse, which would read as growth between the rounds; a
  // small one fills during the first round and then stays level.
  process.env.ASAN_OPTIONS = `${process.env.ASAN_OPTIONS ? `${process.env.ASAN_OPTIONS}:` : ''}quarantine_size_mb=16:thread_local_quarantine_size_kb=64`;
  const server = await startServer(['--sessions', '16', '--queue', '256', '--cache-sessions', '4']);
  let stopped = false;
  try {
    const rssStart = residentBytes(server.child.pid);
    const first = await round(server, SECONDS / 2);
    const second = await round(server, SECONDS / 2);
    for (const [name, r] of [['first', first], ['second', second]]) {
      console.log(`soak ${name} round: ${r.seconds.toFixed(1)} s, ${CLIENTS} clients, ${r.completed} streams completed, ` +
        `${r.aborted} aborted, ${r.tokens} tokens in completed streams (${(r.tokens / r.seconds).toFixed(0)} tok/s), ` +
        `RSS ${mib(r.rss)} MiB`);
      assert.ok(r.completed > 0 && r.aborted > 0, `${name} round: ${r.completed} completed, ${r.aborted} aborted`);
    }
    const m = second.metrics;
    const served = metricValue(m, 'gufo_generated_tokens_total');
    const steps = metricValue(m, 'gufo_decode_steps_total');
    const core = metricValue(m, 'gufo_decode_core_seconds_total');
    const provider = metricValue(m, 'gufo_decode_provider_seconds_total');
    console.log(`soak server: ${metricValue(m, 'gufo_jobs_finished_total', { reason: 'cancelled' })} jobs cancelled by ` +
      `hang-ups, ${served} tokens generated in ${steps} decode steps ` +
      `(${(served / steps).toFixed(1)} sessions per step), core ${(1e6 * core / steps).toFixed(1)} us vs model ` +
      `${(1e6 * provider / steps).toFixed(1)} us per step, cache hits ${metricValue(m, 'gufo_cache_hits_total')}`);
    console.log(`soak RSS: ${mib(rssStart)} MiB at start, ${mib(first.rss)} MiB after round 1, ${mib(second.rss)} MiB after round 2`);
    // Only the cancelled requests' jobs may be cancelled; every request got an answer.
    assert.equal(metricValue(m, 'gufo_jobs_finished_total', { reason: 'error' }), 0);
    assert.equal(metricValue(m, 'gufo_http_requests_total', { code: '429' }), 0, 'the queue was large enough');
    assert.ok(metricValue(m, 'gufo_jobs_finished_total', { reason: 'cancelled' }) > 0, 'hang-ups cancel jobs');
    const underSanitizer = sanitized(server.child.pid);
    const bound = underSanitizer ? RSS_SLACK_SANITIZED_BYTES : Math.max(RSS_SLACK_BYTES, first.rss * RSS_SLACK_SHARE);
    if (underSanitizer) console.log(`soak: sanitizer build, memory bound ${mib(bound)} MiB between rounds`);
    assert.ok(second.rss <= first.rss + bound,
      `memory grew from ${mib(first.rss)} MiB to ${mib(second.rss)} MiB between rounds (bound ${mib(bound)} MiB)`);
    const st = await stopServer(server);
    stopped = true;
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
    assert.ok(!/Sanitizer|runtime error|leak/i.test(server.stderr), server.stderr);
  } finally {
    if (!stopped) await stopServer(server).catch(() => {});
  }
}

// Each round also waits for the streams in flight at its end, which take long under sanitizers.
await runGroups('soak_test.mjs', { soak: groupSoak }, Math.max(300, SECONDS * 6 + 300));

// tests/server/cache_metrics_test.mjs — the core loop of `gufo serve` seen from
// outside: request deadlines, the conversation cache, GET /metrics and idle
// connections.
//
//   node cache_metrics_test.mjs GROUP   (GROUP: deadline | cache | metrics | idle)
//
// Environment and exit codes as server_test.mjs (harness.mjs).
import assert from 'node:assert/strict';
import net from 'node:net';
import {
  MODEL_ID, startServer, stopServer, client, post, assertErrorObject, streamText, runGroups, scrapeMetrics,
  metricValue, OpenAI,
} from './harness.mjs';

async function stopClean(server) {
  const st = await stopServer(server);
  assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
  assert.ok(!/Sanitizer|runtime error/.test(server.stderr), server.stderr);
}

// ---- deadlines ---------------------------------------------------------------

// One session, one thread and a deadline far shorter than the whole burst
// takes: the requests at the back of the line run out of time while queued
// and must get 408 with an OpenAI error object; those at the front finish.
// The deadline is sized from one request's time on this build (sanitizer
// builds are many times slower), so the front of the line always fits.
async function groupDeadline() {
  const long = { model: MODEL_ID, messages: [{ role: 'user', content: 'Go on and on.' }], max_tokens: 120,
    temperature: 1.0, seed: 3, top_k: 0, top_p: 1, min_p: 0 };
  const serverArgs = ['--sessions', '1', '--queue', '64', '--threads', '1'];
  let single = 0;
  const probe = await startServer(serverArgs);
  try {
    for (let i = 0; i < 3; i++) {
      const t = Date.now();
      assert.equal((await post(probe, '/v1/chat/completions', long)).status, 200);
      single = Math.max(single, Date.now() - t);
    }
  } finally {
    await stopClean(probe);
  }
  const timeoutMs = Math.max(200, 4 * single);
  const count = Math.min(64, Math.max(16, Math.ceil((3 * timeoutMs) / Math.max(single, 1))));
  const server = await startServer([...serverArgs, '--request-timeout', String(timeoutMs / 1000)]);
  try {
    const t0 = Date.now();
    const burst = await Promise.all(Array.from({ length: count }, () => post(server, '/v1/chat/completions', long)));
    const took = Date.now() - t0;
    const statuses = burst.map((r) => r.status);
    const late = burst.filter((r) => r.status === 408);
    assert.ok(statuses.every((s) => s === 200 || s === 408), `statuses: ${statuses}`);
    assert.ok(burst.some((r) => r.status === 200), `no request finished inside its deadline: ${statuses}`);
    if (late.length === 0) {
      // Only meaningful when the burst really outlasted the deadline.
      assert.ok(took < 2 * timeoutMs, `the burst took ${took} ms but no request got 408: ${statuses}`);
    } else {
      assertErrorObject(late[0], 408, 'deadline');
    }
    // A streaming request past its deadline ends with an error event, not a hang.
    const openai = client(server);
    const results = await Promise.allSettled(Array.from({ length: 24 }, () => streamText(openai, long)));
    for (const r of results) {
      if (r.status === 'rejected') assert.match(String(r.reason?.message ?? r.reason), /deadline|408|timeout/i);
      else assert.ok(['length', 'stop'].includes(r.value.finish), `finish ${r.value.finish}`);
    }
    // The server still serves afterwards, within the deadline.
    const after = await post(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    assert.equal(after.status, 200, after.text);
    console.log(`deadline: one request ${single} ms, deadline ${timeoutMs} ms, ${burst.length} requests in ` +
      `${took} ms, ${late.length} got 408`);
  } finally {
    await stopClean(server);
  }
}

// ---- conversation cache ------------------------------------------------------

const SYSTEM = { role: 'system', content: 'You are a helpful assistant who answers briefly.' };
const TURNS = [
  ['Name three colours.', 'Which one is warmest?', 'And the coldest?'],
  ['Count to five.', 'Now backwards.', 'Add six.'],
];

// Runs the conversations turn by turn, interleaved (A1 B1 A2 B2 ...), greedy,
// feeding each answer back as the assistant message, as a chat client does.
// Returns every answer and usage in order.
async function converse(server) {
  const openai = client(server);
  const histories = TURNS.map(() => [SYSTEM]);
  const out = [];
  for (let turn = 0; turn < TURNS[0].length; turn++) {
    for (let c = 0; c < TURNS.length; c++) {
      histories[c].push({ role: 'user', content: TURNS[c][turn] });
      const r = await openai.chat.completions.create({ model: MODEL_ID, messages: histories[c], max_tokens: 20,
        temperature: 0 });
      const text = r.choices[0].message.content ?? '';
      histories[c].push({ role: 'assistant', content: text });
      out.push({ text, usage: r.usage });
    }
  }
  // Raw completions continue each other's text, greedy and seeded: on the
  // tiny random-weight model they give varied tokens, so a reused session
  // that differed in any position would show.
  for (const sampling of [{ temperature: 0 }, { temperature: 1, top_k: 0, top_p: 1, min_p: 0, seed: 9 }]) {
    let prompt = 'The quick brown fox';
    for (let turn = 0; turn < 4; turn++) {
      const r = await openai.completions.create({ model: MODEL_ID, prompt, max_tokens: 12, ...sampling });
      out.push({ text: r.choices[0].text, usage: r.usage });
      prompt += `${r.choices[0].text} and then, turn ${turn},`;
    }
  }
  // A streamed turn too: the cache serves streams the same way.
  histories[0].push({ role: 'user', content: 'Thanks.' });
  const s = await streamText(openai, { model: MODEL_ID, messages: histories[0], max_tokens: 20, temperature: 0 });
  out.push({ text: s.text, usage: s.usage });
  return out;
}

// Isolation: greedy answers with the cache (plenty of room, and so little
// room that sessions are evicted between turns) are identical to answers
// without it; later turns reuse their prefix.
async function groupCache() {
  const results = {};
  for (const [name, extra] of [['none', ['--cache-sessions', '0']], ['cache', ['--cache-sessions', '4']],
    ['tight', ['--cache-sessions', '1']]]) {
    const server = await startServer(['--sessions', '2', ...extra]);
    try {
      results[name] = await converse(server);
      results[name].metrics = await scrapeMetrics(server);
    } finally {
      await stopClean(server);
    }
  }
  const texts = (name) => results[name].map((r) => r.text);
  assert.deepEqual(texts('cache'), texts('none'), 'greedy output with the cache differs from without');
  assert.deepEqual(texts('tight'), texts('none'), 'greedy output with evictions differs from without');
  for (const name of ['none', 'cache', 'tight']) {
    // usage.prompt_tokens does not depend on the cache.
    assert.deepEqual(results[name].map((r) => r.usage.prompt_tokens), results.none.map((r) => r.usage.prompt_tokens));
  }
  const m = (name, metric) => metricValue(results[name].metrics, metric);
  const n = results.none.length;
  assert.equal(m('none', 'gufo_cache_hits_total'), 0);
  assert.equal(m('none', 'gufo_cache_reused_tokens_total'), 0);
  // With room for both conversations every later turn is a hit.
  // With room for every conversation only first turns may miss: the two chats' and the first completion's.
  assert.ok(m('cache', 'gufo_cache_misses_total') <= TURNS.length + 1, results.cache.metrics.text);
  assert.ok(m('cache', 'gufo_cache_hits_total') >= n - TURNS.length - 1, results.cache.metrics.text);
  assert.ok(m('cache', 'gufo_cache_reused_tokens_total') > 0);
  // The second chat shares only the system prompt with the first: it gets a copy, the first keeps its history.
  assert.ok(m('cache', 'gufo_cache_forks_total') > 0, results.cache.metrics.text);
  assert.equal(m('cache', 'gufo_cache_hits_total') + m('cache', 'gufo_cache_misses_total'), n);
  // With room for one, the two conversations evict each other's detailed
  // history; a hit can still reuse the shared system prompt.
  assert.ok(m('tight', 'gufo_cache_evictions_total') > 0, results.tight.metrics.text);
  assert.ok(m('tight', 'gufo_cache_reused_tokens_total') < m('cache', 'gufo_cache_reused_tokens_total'));
  // usage.prompt_tokens_details.cached_tokens, where the endpoint reports it, is the reused count.
  const details = results.cache.map((r) => r.usage.prompt_tokens_details?.cached_tokens);
  if (details.some((d) => d !== undefined)) {
    assert.equal(details[0] ?? 0, 0, 'the first turn cannot be cached');
    // Every turn after the chats' first ones reuses a prefix, except the first raw completion,
    // which starts a conversation of its own.
    const firstCompletion = TURNS.length * TURNS[0].length;
    const later = details.filter((_, i) => i >= TURNS.length && i !== firstCompletion);
    assert.ok(later.every((d) => d > 0), `cached_tokens of later turns: ${details}`);
    assert.equal(details.reduce((a, d) => a + (d ?? 0), 0), m('cache', 'gufo_cache_reused_tokens_total'));
  } else {
    console.log('note: usage.prompt_tokens_details.cached_tokens is not reported yet; checked through /metrics');
  }
  console.log(`cache: ${n} turns, hits ${m('cache', 'gufo_cache_hits_total')}, reused tokens ` +
    `${m('cache', 'gufo_cache_reused_tokens_total')} of ${results.cache.reduce((a, r) => a + r.usage.prompt_tokens, 0)} prompt tokens`);
}

// Under --memory-budget the retained sessions give way: a budget with room for
// the model and about three sessions, a cache allowed eight, and eight
// different conversations in a row. Every request must succeed (the memory
// pool's pressure handler evicts retained sessions before refusing), the
// model's memory must stay within the budget, and reuse must still work.
async function groupPressure() {
  const ask = (server, i) => post(server, '/v1/chat/completions', { max_tokens: 8, temperature: 0,
    messages: [{ role: 'user', content: `Conversation number ${i}: tell me about topic ${i * 7}.` }] });
  const used = async (server) => metricValue(await scrapeMetrics(server), 'gufo_model_memory_used_bytes', { kind: 'host' });
  const probe = await startServer(['--sessions', '1', '--cache-sessions', '8']);
  let fixed;
  let perSession;
  try {
    assert.equal((await ask(probe, 0)).status, 200);
    const one = await used(probe);
    assert.equal((await ask(probe, 1)).status, 200);
    perSession = (await used(probe)) - one;
    fixed = one - perSession;
  } finally {
    await stopClean(probe);
  }
  assert.ok(perSession > 0, 'a retained session holds memory');
  const budget = Math.floor(fixed + 3.5 * perSession);
  const server = await startServer(['--sessions', '1', '--cache-sessions', '8', '--memory-budget', `host=${budget}`]);
  try {
    for (let i = 0; i < 8; i++) {
      const r = await ask(server, i);
      assert.equal(r.status, 200, `conversation ${i} under a budget of ${budget} bytes: ${r.text}`);
    }
    const m = await scrapeMetrics(server);
    assert.ok(metricValue(m, 'gufo_cache_evictions_total') >= 4, m.text);
    assert.ok(metricValue(m, 'gufo_cache_sessions') <= 3, m.text);
    assert.ok(metricValue(m, 'gufo_model_memory_peak_bytes', { kind: 'host' }) <= budget, m.text);
    assert.equal(metricValue(m, 'gufo_model_memory_limit_bytes', { kind: 'host' }), budget);
    // The most recent conversation is still retained: asking it again reuses it.
    const hits = metricValue(m, 'gufo_cache_hits_total');
    assert.equal((await ask(server, 7)).status, 200);
    assert.equal(metricValue(await scrapeMetrics(server), 'gufo_cache_hits_total'), hits + 1);
    console.log(`pressure: budget ${budget} bytes (model ${fixed}, one session ${perSession}); ` +
      `${metricValue(m, 'gufo_cache_evictions_total')} evictions, ${metricValue(m, 'gufo_cache_sessions')} retained`);
  } finally {
    await stopClean(server);
  }
}

// ---- GET /metrics --------------------------------------------------------------

// Every sample belongs to a family announced with # HELP and # TYPE.
function assertWellFormed(metrics) {
  for (const s of metrics.samples) {
    const family = metrics.types[s.name] ? s.name : s.name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(metrics.types[family], `no # TYPE for ${s.name}`);
    assert.ok(metrics.help[family], `no # HELP for ${s.name}`);
    if (metrics.types[family] === 'counter') assert.ok(s.value >= 0, `negative counter ${s.name}`);
  }
}

async function groupMetrics() {
  const key = 'metrics-test-key';
  const server = await startServer(['--sessions', '2', '--api-key', key]);
  const auth = { Authorization: `Bearer ${key}` };
  try {
    // Like /v1/*, /metrics needs the key when one is set.
    const denied = await fetch(`${server.base}/metrics`);
    assert.equal(denied.status, 401);
    const before = await scrapeMetrics(server, auth);
    assertWellFormed(before);
    for (const name of ['gufo_http_requests_in_flight', 'gufo_queued_requests', 'gufo_active_sessions',
      'gufo_cache_sessions', 'gufo_cache_bytes', 'gufo_prompt_tokens_total', 'gufo_generated_tokens_total',
      'gufo_cache_hits_total', 'gufo_cache_reused_tokens_total', 'gufo_decode_steps_total',
      'gufo_decode_core_seconds_total', 'gufo_decode_provider_seconds_total', 'process_resident_memory_bytes',
      'gufo_model_memory_used_bytes', 'gufo_model_memory_limit_bytes']) {
      assert.ok(before.types[name], `/metrics lacks ${name}`);
    }
    assert.equal(before.types.gufo_http_request_duration_seconds, 'histogram');
    assert.equal(before.types.gufo_time_to_first_token_seconds, 'histogram');
    assert.ok(metricValue(before, 'process_resident_memory_bytes') > 0);
    assert.ok(metricValue(before, 'gufo_model_memory_used_bytes', { kind: 'host' }) > 0, 'the weights are budgeted');

    const openai = client(server, key);
    const usages = [];
    for (let i = 0; i < 3; i++) {
      const r = await openai.chat.completions.create({ model: MODEL_ID, max_tokens: 5, temperature: 0,
        messages: [{ role: 'user', content: `question ${i}` }] });
      usages.push(r.usage);
    }
    const streamed = await streamText(openai, { model: MODEL_ID, max_tokens: 7, temperature: 0,
      messages: [{ role: 'user', content: 'a streamed question' }] });
    usages.push(streamed.usage);
    const bad = await post(server, '/v1/chat/completions', '{not json', auth);
    assert.equal(bad.status, 400);
    assert.equal((await fetch(`${server.base}/no-such-path`, { headers: auth })).status, 404);

    // A request's duration is recorded once its connection is done with it,
    // which may be just after the client read the answer: wait for that.
    let after;
    for (let tries = 0; ; tries++) {
      after = await scrapeMetrics(server, auth);
      if (metricValue(after, 'gufo_http_requests_in_flight') === 1 || tries === 50) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assertWellFormed(after);
    const delta = (name, labels) => metricValue(after, name, labels) - metricValue(before, name, labels);
    assert.equal(delta('gufo_http_requests_total', { endpoint: '/v1/chat/completions', code: '200' }), 4, after.text);
    assert.equal(delta('gufo_http_requests_total', { endpoint: '/v1/chat/completions', code: '400' }), 1);
    assert.equal(delta('gufo_http_requests_total', { endpoint: 'other', code: '404' }), 1);
    assert.ok(metricValue(after, 'gufo_http_requests_total', { endpoint: '/metrics', code: '401' }) >= 1);
    assert.ok(metricValue(after, 'gufo_http_requests_total', { endpoint: '/metrics', code: '200' }) >= 1);
    assert.equal(delta('gufo_generated_tokens_total'), usages.reduce((a, u) => a + u.completion_tokens, 0));
    assert.equal(delta('gufo_prompt_tokens_total'), usages.reduce((a, u) => a + u.prompt_tokens, 0));
    assert.equal(delta('gufo_jobs_finished_total', { reason: 'length' }), 4);
    assert.equal(delta('gufo_jobs_started_total'), 4);
    assert.equal(delta('gufo_time_to_first_token_seconds_count'), 4);
    assert.ok(delta('gufo_http_request_duration_seconds_count') >= 6);
    assert.ok(delta('gufo_decode_steps_total') >= 6, 'each request decodes after its first token');
    assert.ok(delta('gufo_decode_provider_seconds_total') > 0);
    assert.ok(delta('gufo_decode_core_seconds_total') > 0);
    assert.ok(delta('gufo_prefill_tokens_total') > 0);
    // Prefilled + reused = prompt tokens.
    assert.equal(delta('gufo_prefill_tokens_total') + delta('gufo_cache_reused_tokens_total'),
      delta('gufo_prompt_tokens_total'));
    // Nothing is left running; only this scrape is in flight.
    assert.equal(metricValue(after, 'gufo_active_sessions'), 0);
    assert.equal(metricValue(after, 'gufo_queued_requests'), 0);
    assert.equal(metricValue(after, 'gufo_http_requests_in_flight'), 1);
    assert.ok(metricValue(after, 'gufo_cache_sessions') >= 1 && metricValue(after, 'gufo_cache_sessions') <= 4);
    assert.ok(metricValue(after, 'gufo_cache_bytes') > 0);
    const ratio = delta('gufo_decode_core_seconds_total') / delta('gufo_decode_provider_seconds_total');
    console.log(`metrics: core/provider time per decode step ${(100 * ratio).toFixed(1)}% on the tiny model`);
  } finally {
    await stopClean(server);
  }
}

// ---- idle connections ------------------------------------------------------------

// Resolves with the milliseconds until the server closed a connection that
// sent `send` and then nothing (or null when it stayed open for `limitMs`).
function closedAfter(server, send, limitMs) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const sock = net.connect(server.port, '127.0.0.1', () => { if (send) sock.write(send); });
    const timer = setTimeout(() => { sock.destroy(); resolve(null); }, limitMs);
    sock.on('data', () => {});
    sock.on('close', () => { clearTimeout(timer); resolve(Date.now() - t0); });
    sock.on('error', (e) => { if (e.code !== 'ECONNRESET') reject(e); });
  });
}

async function groupIdle() {
  const server = await startServer(['--idle-timeout', '1', '--sessions', '1', '--threads', '1', '--queue', '2048']);
  try {
    // Silent, half a request line, headers without their end: each is closed after about a second.
    for (const send of ['', 'POST /v1/chat/completions HTTP/1.1\r\n', 'GET /health HTTP/1.1\r\nHost: x\r\n']) {
      const ms = await closedAfter(server, send, 8000);
      assert.ok(ms !== null, `an idle connection (sent ${JSON.stringify(send)}) was not closed within 8 s`);
      assert.ok(ms >= 700, `closed after ${ms} ms, before the idle timeout`);
    }
    // Work that takes longer than the idle timeout is not cut: one session and
    // a line of requests (streaming and not) long enough, on this build, that
    // the last ones wait for seconds before their answer starts.
    const long = { model: MODEL_ID, messages: [{ role: 'user', content: 'Keep going.' }], max_tokens: 200,
      temperature: 1, seed: 5, top_k: 0, top_p: 1, min_p: 0 };
    // One connection per request ('Connection: close'): what is tested is work that
    // outlasts the timeout, not a keep-alive socket the client reuses just as the
    // server closes it (a loaded test machine can be that slow; the idle keep-alive
    // close is checked last, on its own).
    const close = { Connection: 'close' };
    const openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000,
      defaultHeaders: close });
    let single = Date.now();
    assert.equal((await post(server, '/v1/chat/completions', long, close)).status, 200);
    single = Math.max(1, Date.now() - single);
    // The line must outlast the idle timeout; a loaded machine makes one
    // request's time a poor guide, so a line that drained too fast is
    // retried twice as long.
    let count = Math.min(200, Math.max(32, Math.ceil(3000 / single)));
    let took = 0;
    for (;;) {
      const streams = Math.ceil(count / 4);
      const t0 = Date.now();
      const all = await Promise.all([
        ...Array.from({ length: count - streams }, () => post(server, '/v1/chat/completions', long, close)),
        ...Array.from({ length: streams }, () => streamText(openai, long)),
      ]);
      took = Date.now() - t0;
      for (const r of all) {
        if ('status' in r) assert.equal(r.status, 200, r.text);
        else assert.ok(['length', 'stop'].includes(r.finish));
      }
      if (took > 1500) break;
      assert.ok(count < 1600, `the queue of ${count} requests drained in ${took} ms: too fast to show that work outlasting the idle timeout is kept`);
      count *= 2;
    }
    console.log(`idle: ${count} requests (one alone: ${single} ms) over ${took} ms all answered with --idle-timeout 1`);
    // An idle keep-alive connection after a request is closed too: the server keeps no thread for it.
    const health = await closedAfter(server, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', 8000);
    assert.ok(health !== null && health >= 700, `keep-alive connection after a request: ${health}`);
  } finally {
    await stopClean(server);
  }
}

await runGroups('cache_metrics_test.mjs', { deadline: groupDeadline, cache: groupCache, pressure: groupPressure,
  metrics: groupMetrics, idle: groupIdle });

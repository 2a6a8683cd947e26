// tests/server/server_test.mjs — `gufo serve` driven by real clients.
//
//   node server_test.mjs GROUP      (GROUP: chat | concurrency | errors | auth | lifecycle | load)
//
// Environment: GUFO_BIN (the gufo binary), GUFO_MODEL (a text model with a
// tokenizer and chat template: the qwen golden tiny.gguf). Starts its own
// server on a free loopback port (--port 0; the port is read from the
// "serving ... on http://..." line), drives it with the official `openai` npm
// package and node's fetch, and always kills the server at the end. Exit 0
// pass, 1 fail, 77 skip (node_modules not installed: run `npm ci` in
// tests/server/client).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  BIN, MODEL, MODEL_ID, MESSAGES, startServer, stopServer, client, post, assertErrorObject, streamText, runGroups,
} from './harness.mjs';

// ---- groups ------------------------------------------------------------------

async function groupChat() {
  const server = await startServer();
  try {
    const openai = client(server);
    const health = await fetch(`${server.base}/health`);
    assert.equal(health.status, 200);
    const models = await openai.models.list();
    assert.deepEqual(models.data.map((m) => m.id), [MODEL_ID]);

    // Greedy: HTTP equals `gufo prompt --chat --temperature 0` for the same messages.
    const params = { model: MODEL_ID, messages: MESSAGES, max_tokens: 24, temperature: 0 };
    const full = await openai.chat.completions.create(params);
    assert.equal(full.object, 'chat.completion');
    assert.equal(full.choices[0].message.role, 'assistant');
    assert.equal(full.choices[0].finish_reason, 'length');
    assert.equal(full.usage.completion_tokens, 24);
    assert.ok(full.usage.prompt_tokens > 0);
    assert.equal(full.usage.total_tokens, full.usage.prompt_tokens + 24);
    const cli = spawnSync(BIN, ['prompt', '--model', MODEL, '--quiet', '--temperature', '0', '-n', '24',
      '--system', MESSAGES[0].content, MESSAGES[1].content], { encoding: 'utf8', timeout: 60000 });
    assert.equal(cli.status, 0, cli.stderr);
    const text = full.choices[0].message.content;
    // `gufo prompt` ends its output with a newline when the text does not.
    const expected = text.endsWith('\n') ? text : `${text}\n`;
    assert.equal(cli.stdout, expected, 'HTTP greedy output differs from gufo prompt');

    // Streaming gives the same text, a role first, the same finish and usage.
    const streamed = await streamText(openai, params);
    assert.equal(streamed.role, 'assistant');
    assert.equal(streamed.text, text);
    assert.equal(streamed.finish, 'length');
    // The same counts; cached_tokens may differ (the second request can reuse the first one's session).
    const counts = ({ prompt_tokens, completion_tokens, total_tokens }) => ({ prompt_tokens, completion_tokens, total_tokens });
    assert.deepEqual(counts(streamed.usage), counts(full.usage));
    assert.equal(typeof streamed.usage.prompt_tokens_details?.cached_tokens, 'number');

    // Seeded sampling reproduces; stop strings cut before the stop text.
    const sampled = { model: MODEL_ID, messages: [{ role: 'user', content: 'Tell me a story about a fox.' }],
      max_tokens: 40, temperature: 1.0, top_k: 0, top_p: 1, min_p: 0, seed: 1234 };
    const a = await openai.chat.completions.create(sampled);
    const b = await openai.chat.completions.create(sampled);
    const sText = a.choices[0].message.content;
    assert.equal(b.choices[0].message.content, sText, 'equal seeds must give equal output');
    const chars = [...sText];
    if (chars.length >= 8) {
      const stop = chars.slice(4, 7).join('');
      const cut = sText.slice(0, sText.indexOf(stop));
      const stopped = await openai.chat.completions.create({ ...sampled, stop: [stop] });
      assert.equal(stopped.choices[0].message.content, cut, `stop ${JSON.stringify(stop)}`);
      assert.equal(stopped.choices[0].finish_reason, 'stop');
      const stoppedStream = await streamText(openai, { ...sampled, stop });
      assert.equal(stoppedStream.text, cut);
      assert.equal(stoppedStream.finish, 'stop');
    }

    // Assistant tool calls and tool results render through the template.
    const history = await openai.chat.completions.create({
      model: MODEL_ID, max_tokens: 4, temperature: 0,
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 3}' },
      ],
    });
    assert.ok(['stop', 'length'].includes(history.choices[0].finish_reason));
    // `tools` reach the template: the tiny model's 256-token context cannot hold the
    // tool preamble, so the same request with a tool is refused for its (longer) prompt.
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    const withTools = await post(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, tools });
    assertErrorObject(withTools, 400, 'tools over the tiny context');
    assert.equal(withTools.json.error.code, 'context_length_exceeded');
    const noneChoice = await post(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, tools, tool_choice: 'none' });
    assert.equal(noneChoice.status, 200, 'tool_choice "none" leaves the tools out');

    // Content as an array of text parts is the same as a string.
    const parts = await openai.chat.completions.create({ ...params,
      messages: [MESSAGES[0], { role: 'user', content: [{ type: 'text', text: 'Name three ' }, { type: 'text', text: 'colours.' }] }] });
    assert.equal(parts.choices[0].message.content, text);

    // /v1/completions, streaming and not.
    const comp = await openai.completions.create({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 10, temperature: 0 });
    assert.equal(comp.object, 'text_completion');
    assert.equal(comp.usage.completion_tokens, 10);
    const compStream = await openai.completions.create({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 10, temperature: 0, stream: true });
    let compText = '';
    for await (const c of compStream) compText += c.choices[0]?.text ?? '';
    assert.equal(compText, comp.choices[0].text);
  } finally {
    const st = await stopServer(server);
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
  }
}

async function groupConcurrency() {
  const server = await startServer(['--sessions', '4']);
  try {
    const openai = client(server);
    const reqs = [];
    for (let i = 0; i < 6; i++) {
      reqs.push({ model: MODEL_ID, messages: [{ role: 'user', content: `Question number ${i}: why is the sky blue?` }],
        max_tokens: 20 + 3 * i, temperature: i % 2 ? 0 : 0.9, seed: 100 + i, top_k: 0, top_p: 1, min_p: 0 });
    }
    const serial = [];
    for (const r of reqs) serial.push((await openai.chat.completions.create(r)).choices[0].message.content);
    // All at once, half of them streaming: every session sees only its own tokens.
    const parallel = await Promise.all(reqs.map(async (r, i) => {
      if (i % 2) return (await streamText(openai, r)).text;
      return (await openai.chat.completions.create(r)).choices[0].message.content;
    }));
    assert.deepEqual(parallel, serial, 'concurrent output differs from one-at-a-time output');
  } finally {
    const st = await stopServer(server);
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
  }
}

async function groupErrors() {
  const server = await startServer(['--max-body', '65536', '--context', '128']);
  try {
    const ok = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
    const chat = '/v1/chat/completions';
    assertErrorObject(await post(server, chat, '{"messages": ['), 400, 'malformed JSON');
    assertErrorObject(await post(server, chat, '[1, 2]'), 400, 'not an object');
    assertErrorObject(await post(server, chat, { ...ok, messages: 'hello' }), 400, 'messages not an array');
    assertErrorObject(await post(server, chat, { ...ok, messages: [] }), 400, 'empty messages');
    assertErrorObject(await post(server, chat, { max_tokens: 2 }), 400, 'no messages');
    assertErrorObject(await post(server, chat, { ...ok, messages: [{ role: 'user' }] }), 400, 'message without content');
    assertErrorObject(await post(server, chat, { ...ok, messages: [{ role: 'wizard', content: 'x' }] }), 400, 'unknown role');
    assertErrorObject(await post(server, chat, { ...ok, temperature: 'hot' }), 400, 'temperature wrong type');
    assertErrorObject(await post(server, chat, { ...ok, temperature: 7 }), 400, 'temperature out of range');
    assertErrorObject(await post(server, chat, { ...ok, max_tokens: 1.5 }), 400, 'max_tokens not an integer');
    assertErrorObject(await post(server, chat, { ...ok, max_tokens: 0 }), 400, 'max_tokens 0');
    assertErrorObject(await post(server, chat, { ...ok, stream: 'yes' }), 400, 'stream wrong type');
    assertErrorObject(await post(server, chat, { ...ok, stop: 5 }), 400, 'stop wrong type');
    assertErrorObject(await post(server, chat, { ...ok, tools: {} }), 400, 'tools wrong type');
    assertErrorObject(await post(server, chat, { ...ok, n: 2 }), 400, 'n = 2');
    const unknown = await post(server, chat, { ...ok, frobnicate: true });
    assertErrorObject(unknown, 400, 'unknown field');
    assert.equal(unknown.json.error.param, 'frobnicate');
    const model = await post(server, chat, { ...ok, model: 'no-such-model' });
    assertErrorObject(model, 404, 'unknown model');
    assert.equal(model.json.error.code, 'model_not_found');
    const overflow = await post(server, chat, { ...ok, messages: [{ role: 'user', content: 'word '.repeat(400) }] });
    assertErrorObject(overflow, 400, 'prompt over the context');
    assert.equal(overflow.json.error.code, 'context_length_exceeded');
    const overflow2 = await post(server, chat, { ...ok, max_tokens: 1000 });
    assertErrorObject(overflow2, 400, 'max_tokens over the context');
    assert.equal(overflow2.json.error.code, 'context_length_exceeded');
    assertErrorObject(await post(server, chat, 'x'.repeat(100000)), 413, 'oversize body');
    assertErrorObject(await post(server, '/v1/completions', { prompt: 7 }), 400, 'completion prompt wrong type');
    assertErrorObject(await post(server, '/v1/nothing', {}), 404, 'unknown path');
    const wrongMethod = await fetch(`${server.base}${chat}`);
    assertErrorObject({ status: wrongMethod.status, text: '', json: await wrongMethod.json() }, 405, 'GET on a POST route');
    // Invalid UTF-8 in a message must not crash anything.
    const bad = Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}],"max_tokens":2}')]);
    const badRes = await fetch(`${server.base}${chat}`, { method: 'POST', body: bad, headers: { 'Content-Type': 'application/json' } });
    assert.ok(badRes.status === 200 || badRes.status === 400, `invalid UTF-8: ${badRes.status}`);
    await badRes.text();
    // The openai client surfaces the same errors as exceptions with the status.
    const openai = client(server);
    await assert.rejects(openai.chat.completions.create({ model: MODEL_ID, messages: [] }), (e) => e.status === 400);
    await assert.rejects(openai.chat.completions.create({ model: 'nope', messages: MESSAGES }), (e) => e.status === 404);
    // And after all that the server still answers.
    const after = await post(server, chat, ok);
    assert.equal(after.status, 200, after.text);
  } finally {
    const st = await stopServer(server);
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
  }
}

async function groupAuth() {
  const server = await startServer(['--api-key', 'sekret-key-123']);
  try {
    const ok = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
    assertErrorObject(await post(server, '/v1/chat/completions', ok), 401, 'no key');
    assertErrorObject(await post(server, '/v1/chat/completions', ok, { Authorization: 'Bearer sekret-key-124' }), 401, 'wrong key');
    assertErrorObject(await post(server, '/v1/chat/completions', ok, { Authorization: 'Bearer sekret' }), 401, 'prefix of the key');
    assertErrorObject(await post(server, '/v1/chat/completions', ok, { Authorization: 'sekret-key-123' }), 401, 'no Bearer');
    const good = await post(server, '/v1/chat/completions', ok, { Authorization: 'Bearer sekret-key-123' });
    assert.equal(good.status, 200, good.text);
    assert.equal((await fetch(`${server.base}/health`)).status, 200, '/health needs no key');
    const models = await client(server, 'sekret-key-123').models.list();
    assert.equal(models.data[0].id, MODEL_ID);
    await assert.rejects(client(server, 'bad').models.list(), (e) => e.status === 401);
  } finally {
    const st = await stopServer(server, 'SIGINT'); // Ctrl-C stops as cleanly as SIGTERM
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
  }
}

async function retry429(fn) {
  const t0 = Date.now();
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (e.status !== 429 || Date.now() - t0 > 5000) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function groupLifecycle() {
  // One session and no queue: a second request while one runs gets 429, and a
  // disconnected client must free the session for the next one.
  const server = await startServer(['--sessions', '1', '--queue', '0']);
  try {
    const openai = client(server);
    const long = { model: MODEL_ID, messages: [{ role: 'user', content: 'Go on forever.' }], max_tokens: 200,
      temperature: 1.0, seed: 7, top_k: 0, top_p: 1, min_p: 0 };
    // Queue full: with one session and no queue, a burst of simultaneous
    // requests must be partly refused with 429 and partly served. (A single
    // request "while another runs" is a race on a model this small: the
    // server generates ahead of a slow reader and may finish first.)
    const burst = await Promise.all(Array.from({ length: 16 }, () =>
      post(server, '/v1/chat/completions', { ...long, stream: false })));
    const refused = burst.filter((r) => r.status === 429);
    assert.ok(refused.length > 0, `a burst of 16 on one session got no 429: ${burst.map((r) => r.status)}`);
    assert.ok(burst.some((r) => r.status === 200), `a burst of 16 on one session served none: ${burst.map((r) => r.status)}`);
    assertErrorObject(refused[0], 429, 'queue full');
    for (let round = 0; round < 3; round++) {
      const controller = new AbortController();
      // The previous round's session is freed within a wait slice of its disconnect: retry 429 briefly.
      const stream = await retry429(() => openai.chat.completions.create({ ...long, stream: true }, { signal: controller.signal }));
      const it = stream[Symbol.asyncIterator]();
      await it.next(); // role chunk: the job is admitted or queued
      await it.next(); // first content: it holds the only session
      controller.abort();
      try { await it.next(); } catch { /* aborted */ }
    }
    // The aborted streams were cancelled: the one session serves again quickly.
    const t0 = Date.now();
    let after;
    for (;;) {
      after = await post(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      if (after.status !== 429 || Date.now() - t0 > 5000) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(after.status, 200, `after disconnects: ${after.text}`);
    // A non-streaming client that gives up also frees its session.
    const controller = new AbortController();
    const pending = fetch(`${server.base}/v1/chat/completions`, { method: 'POST', signal: controller.signal,
      body: JSON.stringify(long), headers: { 'Content-Type': 'application/json' } }).catch(() => null);
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    await pending;
    const t1 = Date.now();
    for (;;) {
      after = await post(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      if (after.status !== 429 || Date.now() - t1 > 5000) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(after.status, 200, `after a non-streaming disconnect: ${after.text}`);

    // SIGTERM while a stream runs: the server stops cleanly and promptly.
    const stream = await openai.chat.completions.create({ ...long, stream: true });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
  } finally {
    const st = await stopServer(server);
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
    assert.ok(!/Sanitizer/.test(server.stderr), server.stderr);
  }
}

// Many streaming clients at once, a quarter of them hanging up at random
// points: nothing crashes, every other stream completes, the sessions all come
// back (a full set of concurrent requests is served afterwards), and the server
// exits cleanly (sanitizer builds would report leaked jobs here).
async function groupLoad() {
  const server = await startServer(['--sessions', '4', '--queue', '64']);
  try {
    const openai = client(server);
    let seed = 42;
    const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const jobs = [];
    for (let i = 0; i < 24; i++) {
      const abortAfter = rand() < 0.25 ? 1 + Math.floor(rand() * 10) : -1;
      jobs.push((async () => {
        const controller = new AbortController();
        const stream = await openai.chat.completions.create({ model: MODEL_ID, stream: true, max_tokens: 150,
          messages: [{ role: 'user', content: `client ${i}` }], temperature: 0.7, seed: i },
        { signal: controller.signal });
        let chunks = 0;
        let finish = null;
        try {
          for await (const chunk of stream) {
            chunks++;
            if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
            if (chunks === abortAfter) {
              controller.abort(); // hang up, as a client that gives up does
              return 'aborted';
            }
          }
        } catch (e) {
          if (abortAfter < 0) throw e;
          return 'aborted';
        }
        return abortAfter < 0 || chunks < abortAfter ? finish : 'aborted';
      })());
    }
    const results = await Promise.all(jobs);
    for (const r of results) assert.ok(r === 'length' || r === 'stop' || r === 'aborted', `stream ended with ${r}`);
    const again = await Promise.all([0, 1, 2, 3].map(() => openai.chat.completions.create({ model: MODEL_ID,
      messages: [{ role: 'user', content: 'after' }], max_tokens: 4, temperature: 0 })));
    for (const r of again) assert.equal(r.usage.completion_tokens, 4);
  } finally {
    const st = await stopServer(server);
    assert.equal(st.code, 0, `server exit ${JSON.stringify(st)}:\n${server.stderr}`);
    assert.ok(!/Sanitizer/.test(server.stderr), server.stderr);
  }
}

await runGroups('server_test.mjs', { load: groupLoad, chat: groupChat, concurrency: groupConcurrency, errors: groupErrors, auth: groupAuth, lifecycle: groupLifecycle });

#!/usr/bin/env python3
"""`gufo serve`'s conversation cache on qwen35-cpu, a model that snapshots but cannot rewind.

Issue 14, "State that cannot rewind": a conversation that branches or is rewound
continues exactly as a fresh one would. Two servers on the tiny random qwen35
model: one with the cache (retained sessions and checkpoints, the default) and
one with `--cache-sessions 0`. The same greedy chat requests go to both:

  turn 1, turn 2 continuing it (the answer fed back as the assistant message),
  a branch (turn 1 with its user message edited), a regenerate (turn 1 again),
  a three-turn conversation with another system prompt, and a raw completion
  asked twice.

Every answer (content, reasoning, finish reason, token counts) must be the same
on both servers; on the cached one turn 2, the branch, the regenerate, the later
turns and the second completion must have reused prompt tokens
(usage.prompt_tokens_details.cached_tokens), served by checkpoints
(gufo_cache_checkpoint_hits_total in /metrics), while the uncached server takes
no checkpoint and reuses nothing.

A third server runs with the cache and `--speculative mtp` (one request at a
time generates, so every step drafts and verifies): its answers must be the
same too, with verify steps and draft tokens counted in /metrics.

Usage: serve_cache.py GUFO RANDOM_MODEL_TOOL SCRATCH_DIR   (exit 77: no gufo binary)
"""
import json
import os
import subprocess
import sys
import threading
import urllib.request

MAX_TOKENS = 16
SYSTEM = {"role": "system", "content": "You are a helpful assistant who answers briefly and kindly."}
OTHER_SYSTEM = {"role": "system", "content": "You are a terse pirate; answer every question in one line."}


class Server:
    """One `gufo serve` on a free port (--port 0: the server prints the port it got)."""

    def __init__(self, gufo, model, extra):
        # qwen35-cpu serves (MTP speculation is its own; qwen35-gpu has none yet): hide a GPU.
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")
        self.proc = subprocess.Popen([gufo, "serve", "--model", model, "--port", "0", "--threads", "1", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        line = self.proc.stdout.readline()
        marker = line.find("/v1")
        if marker < 0:
            self.proc.kill()
            raise SystemExit(f"the server did not start: {line!r}\n{''.join(self.stderr)}")
        self.base = line[line.rfind(":", 0, marker) + 1:marker]
        self.base = f"http://127.0.0.1:{int(self.base)}"

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)

    def metrics(self):
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as r:
            values = {}
            for line in r.read().decode().splitlines():
                if line and not line.startswith("#") and "{" not in line:
                    name, value = line.split()
                    values[name] = float(value)
            return values

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(timeout=20)
        if code != 0:
            raise SystemExit(f"the server exited {code}:\n{''.join(self.stderr)}")


def chat(server, messages):
    r = server.post("/v1/chat/completions", {"messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0})
    m = r["choices"][0]["message"]
    answer = {"content": m.get("content") or "", "reasoning": m.get("reasoning_content") or "",
              "finish": r["choices"][0]["finish_reason"], "prompt_tokens": r["usage"]["prompt_tokens"],
              "completion_tokens": r["usage"]["completion_tokens"]}
    return answer, r["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)


def complete(server, prompt):
    r = server.post("/v1/completions", {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0})
    answer = {"text": r["choices"][0]["text"], "finish": r["choices"][0]["finish_reason"],
              "prompt_tokens": r["usage"]["prompt_tokens"]}
    return answer, r["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)


def session(server):
    """The requests, in order: a list of (name, answer, cached tokens, whether reuse is required)."""
    out = []

    def ask(name, messages, must_reuse):
        answer, cached = chat(server, messages)
        out.append((name, answer, cached, must_reuse))
        return answer

    turn1 = [SYSTEM, {"role": "user", "content": "Name three colours."}]
    a1 = ask("turn 1", turn1, False)
    ask("turn 2", turn1 + [{"role": "assistant", "content": a1["content"]},
                           {"role": "user", "content": "Which one is warmest?"}], True)
    ask("branch", [SYSTEM, {"role": "user", "content": "Name three animals."}], True)
    ask("regenerate", turn1, True)
    history = [OTHER_SYSTEM]
    for i, question in enumerate(["Where is the treasure?", "How deep?", "And who buried it?"]):
        history.append({"role": "user", "content": question})
        answer = ask(f"multi-turn {i + 1}", history, i > 0)
        history.append({"role": "assistant", "content": answer["content"]})
    for i in range(2):
        answer, cached = complete(server, "The quick brown fox jumps over")
        out.append((f"completion {i + 1}", answer, cached, i > 0))
    return out


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    gufo, tool, scratch = sys.argv[1:]
    if not gufo:
        print("no gufo binary in this build: skipped")
        return 77
    os.makedirs(scratch, exist_ok=True)
    model = os.path.join(scratch, "serve-cache-f32.gguf")
    subprocess.run([tool, "--type", "f32", "--out", model], check=True, stdout=subprocess.DEVNULL)

    cached_server = Server(gufo, model, [])
    fresh_server = Server(gufo, model, ["--cache-sessions", "0"])
    speculative_server = Server(gufo, model, ["--speculative", "mtp"])
    servers = (("cached", cached_server), ("fresh", fresh_server), ("speculative", speculative_server))
    try:
        # The two servers answer in parallel (one thread each).
        results = {}
        workers = [threading.Thread(target=lambda s=s, k=k: results.__setitem__(k, session(s)))
                   for k, s in servers]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if set(results) != {k for k, _ in servers}:
            raise SystemExit("a conversation failed (see the traceback above)")
        cached_metrics, fresh_metrics = cached_server.metrics(), fresh_server.metrics()
        speculative_metrics = speculative_server.metrics()
    finally:
        for _, s in servers:
            if s.proc.poll() is None:
                s.stop()

    failures = []
    for (name, with_cache, reused, must_reuse), (_, fresh, fresh_reused, _) in zip(results["cached"],
                                                                                   results["fresh"]):
        print(f"{name}: {with_cache['prompt_tokens']} prompt tokens, {reused} from the cache; "
              f"{'same' if with_cache == fresh else 'DIFFERENT'} answer")
        if with_cache != fresh:
            failures.append(f"{name}: with the cache {with_cache!r}, without {fresh!r}")
        if must_reuse and reused == 0:
            failures.append(f"{name}: reused no prompt tokens")
        if fresh_reused:
            failures.append(f"{name}: the server without a cache reused {fresh_reused} tokens")
    for (name, speculated, reused, must_reuse), (_, fresh, _, _) in zip(results["speculative"], results["fresh"]):
        if speculated != fresh:
            failures.append(f"{name}: with --speculative mtp {speculated!r}, plain {fresh!r}")
        if must_reuse and reused == 0:
            failures.append(f"{name}: the --speculative server reused no prompt tokens")
    spec_names = ["gufo_speculative_steps_total", "gufo_speculative_drafted_tokens_total",
                  "gufo_speculative_accepted_tokens_total"]
    print("speculative server: " + ", ".join(f"{n} {speculative_metrics.get(n, 0):g}" for n in spec_names)
          + f"; {sum(a == b for (_, a, _, _), (_, b, _, _) in zip(results['speculative'], results['fresh']))}"
          f" of {len(results['fresh'])} answers the same as plain decoding")
    if speculative_metrics.get("gufo_speculative_steps_total", 0) == 0 or \
            speculative_metrics.get("gufo_speculative_drafted_tokens_total", 0) == 0:
        failures.append("the --speculative server ran no verify step")
    if cached_metrics.get("gufo_speculative_steps_total", 0) != 0:
        failures.append("the server without --speculative ran verify steps")
    names = ["gufo_cache_checkpoint_hits_total", "gufo_cache_checkpoints_created_total", "gufo_cache_checkpoints",
             "gufo_cache_hits_total", "gufo_cache_reused_tokens_total"]
    print("cached server: " + ", ".join(f"{n} {cached_metrics.get(n, 0):g}" for n in names))
    # turn 2, branch, regenerate, multi-turn 2 and 3, completion 2: each from a checkpoint.
    if cached_metrics.get("gufo_cache_checkpoint_hits_total", 0) < 6:
        failures.append("fewer than 6 requests were served by a checkpoint")
    if fresh_metrics.get("gufo_cache_checkpoints_created_total", 0) != 0:
        failures.append("the server without a cache took checkpoints")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

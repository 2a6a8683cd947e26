#!/usr/bin/env python3
"""Per-step host overhead of `gufo serve`, from its /metrics (Python stdlib only).

The twin of step_overhead.mjs for machines without node (the GPU machine):
starts `gufo serve`, runs each number of streaming clients in turn for
--seconds (greedy raw completions back to back, so each decode step batches
about that many sessions), and prints, per phase, time inside the provider's
decode() against time the core spends around it per decode step.

    python3 tests/server/step_overhead.py --bin build/host/gufo --model M.gguf --clients 1,8,16
"""
import argparse
import http.client
import json
import re
import subprocess
import sys
import threading
import time


def scrape(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    values = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        if m:
            values[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return values


def client(port, cid, until, tokens, counts):
    n = 0
    while time.time() < until:
        body = json.dumps({"prompt": "Stream %d, request %d:" % (cid, n), "max_tokens": tokens,
                           "temperature": 0, "stream": True})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise SystemExit("request failed: %d %s" % (resp.status, resp.read()[:300]))
        while resp.readline():
            pass
        conn.close()
        n += 1
    counts[cid] = n


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--clients", default="1,8,16")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--serve-args", default="", help="more serve options, space-separated")
    a = p.parse_args()
    phases = [int(c) for c in a.clients.split(",")]
    cmd = [a.bin, "serve", "--model", a.model, "--port", "0", "--sessions", str(max(phases)),
           "--cache-sessions", "0"] + a.serve_args.split()
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        m = re.search(r"on http://[^\s]+:(\d+)/v1", line)
        if not m:
            raise SystemExit("server did not start: %r" % line)
        port = int(m.group(1))
        print(line.strip())
        print("| clients | requests | sessions per step | decode() per step | core per step | core per session "
              "per step | core / decode() |")
        print("|---|---|---|---|---|---|---|")
        for clients in phases:
            before = scrape(port)
            until = time.time() + a.seconds
            counts = [0] * clients
            threads = [threading.Thread(target=client, args=(port, i, until, a.tokens, counts)) for i in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            after = scrape(port)
            d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
            steps = d["gufo_decode_steps_total"]
            sessions = d["gufo_decode_step_sessions_total"]
            core = d["gufo_decode_core_seconds_total"]
            provider = d["gufo_decode_provider_seconds_total"]
            print("| %d | %d | %.2f | %.1f us | %.1f us | %.2f us | %.3f %% |" % (
                clients, sum(counts), sessions / steps, 1e6 * provider / steps, 1e6 * core / steps,
                1e6 * core / sessions, 100 * core / provider))
            sys.stdout.flush()
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""test_serve.py — `gufo serve embeddings` on the tiny model answers /v1/embeddings.

    test_serve.py GUFO TINY.gguf GOLDEN.json

Starts the server on a free port, asks for two golden texts with
"dimensions": 256, and checks: two vectors of 256 floats of unit length, the
first equal to the golden vector's renormalised prefix (1e-5), and
usage.prompt_tokens the golden ids' count (BOS and EOS included). Also
"encoding_format": "base64" and a size the model does not offer (an error).
Exit status: 0 ok, 1 failure, 77 no tiny model.
"""
import base64
import json
import math
import os
import re
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    gufo, model, golden_path = sys.argv[1:4]
    if not gufo:
        print("SKIP: this build has no gufo host")
        return 77
    if not os.path.exists(model):
        print(f"SKIP: {model} is missing (npm ci in tests/reference, then rebuild)")
        return 77
    golden = json.load(open(golden_path))["items"]
    a, b = golden[2], golden[3]
    server = subprocess.Popen([gufo, "serve", "embeddings", "--model", model, "--port", "0", "--threads", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    failures = []
    try:
        port = None
        deadline = time.time() + 60
        seen = ""
        while port is None and time.time() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            seen += line
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
        if port is None:
            print("the server printed no port:\n" + seen)
            return 1
        status, r = post(port, {"input": [a["text"], b["text"]], "dimensions": 256})
        if status != 200:
            print(f"status {status}: {r}")
            return 1
        vecs = [d["embedding"] for d in sorted(r["data"], key=lambda d: d["index"])]
        if len(vecs) != 2 or any(len(v) != 256 for v in vecs):
            failures.append(f"expected two vectors of 256, got {[len(v) for v in vecs]}")
        for v in vecs:
            norm = math.sqrt(sum(x * x for x in v))
            if abs(norm - 1) > 1e-5:
                failures.append(f"norm {norm}, not 1")
        prefix = a["embedding"][:256]
        s = math.sqrt(sum(x * x for x in prefix))
        diff = max(abs(x - y / s) for x, y in zip(vecs[0], prefix))
        if diff > 1e-5:
            failures.append(f"first vector differs from the golden prefix by {diff}")
        want_tokens = len(a["ids"]) + len(b["ids"])
        if r["usage"]["prompt_tokens"] != want_tokens:
            failures.append(f"usage.prompt_tokens {r['usage']['prompt_tokens']}, expected {want_tokens}")
        print(f"dimensions 256: norms ok, max |difference| to the golden {diff:.3g}, prompt_tokens "
              f"{r['usage']['prompt_tokens']}")
        status, r = post(port, {"input": a["text"], "dimensions": 128, "encoding_format": "base64"})
        raw = base64.b64decode(r["data"][0]["embedding"]) if status == 200 else b""
        if len(raw) != 128 * 4:
            failures.append(f"base64: status {status}, {len(raw)} bytes")
        else:
            v = struct.unpack("<128f", raw)
            if abs(math.sqrt(sum(x * x for x in v)) - 1) > 1e-5:
                failures.append("base64 vector is not unit length")
        status, r = post(port, {"input": a["text"], "dimensions": 100})
        if status < 400:
            failures.append(f"dimensions 100 (not offered) answered {status}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

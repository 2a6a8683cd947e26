#!/usr/bin/env python3
"""compare.py — gufo against llama.cpp on the same machine, the same GGUF files, in one run.

    compare.py --llama-cpp LLAMA_BIN_DIR --gufo PATH/TO/gufo --models DIR --out DIR [options]

For each model type (q4_k_m first, then q8_0, then bf16: the order matters when
the time budget runs out) it measures, engine after engine on the same file:

  bench   prefill 512/4k/32k/128k tokens at depth 0 and decode 128 tokens at
          depth 0/4k/32k: `gufo bench --json` against `llama-bench -o json`
          (flash attention on, every layer on the GPU);
  serve   1/8/32 concurrent streams through `gufo serve` against `llama-server`:
          this script's own HTTP client (one thread per stream, streamed chat
          completions, greedy, same prompt lengths and max_tokens), giving the
          aggregate generated tokens per second and the time to first token;
  roofline bytes one batch-1 decode step moves (every weight once, one row of
          the embedding, the keys and values of the cached positions: from the
          GGUF's tensor sizes, gguf_info.py) against the measured memory
          bandwidth (membw.cu compiled with nvcc at run time, else torch, else
          --bandwidth-gbs), as a fraction of the roofline;
  memory  peak device memory of each engine's process during each run
          (nvidia-smi sampled in the background; without a GPU, the process's
          peak resident memory instead, labelled so).

Models are found as DIR/qwen3-SHAPE-TYPE.gguf (qwen_random_model's names, see
README.md). Every run has a timeout, the whole script a time budget
(--budget-s): what does not fit is reported as not run, with the reason, as is
anything missing (no gufo GPU provider, no llama.cpp binary, a failed run).
Results go to OUT/results.json (everything, machine-readable), OUT/results.md
(the tables) and OUT/logs.txt (the commands and the tail of their output).
--resume OUT/results.json keeps earlier measurements and runs only the rest (a timed-out
cell counts as measured unless --retry-timeouts).

--self-test checks this script's own parsing and arithmetic on a tiny model it
writes with --qwen-random-model, then, when --llama-cpp is given, runs a short
end-to-end comparison on the CPU; without --llama-cpp it exits 77 (skipped).

Python standard library only: the GPU machine has no package registry.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_info  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TYPES = ["q4_k_m", "q8_0", "bf16"]

# Targets (gufo / llama.cpp, and fraction of the bandwidth roofline): issue 5's on the GPU,
# issue 23's on the CPU (--cpu).
TARGETS = {
    "gpu": {"decode": 2.0, "prefill": 1.5, "streams": 2.0, "roofline": 0.70},
    "cpu": {"decode": 1.0, "prefill": 1.0, "streams": 1.0, "roofline": 0.80},
}


def targets_of(report):
    return TARGETS["cpu" if report.get("mode") == "cpu" else "gpu"]


# ---- small helpers ----------------------------------------------------------------------------

class Log:
    """Everything that ran, with the tail of its output, in one file (logs.txt)."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, text):
        with self.lock:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text if text.endswith("\n") else text + "\n")
        print(text.rstrip("\n")[:400], file=sys.stderr, flush=True)


def tail(text, n=3000):
    text = text or ""
    return text if len(text) <= n else "…" + text[-n:]


class Budget:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()


class MemorySampler(threading.Thread):
    """Peak device memory (nvidia-smi, MiB over the baseline) or, without a GPU, the process's peak RSS."""

    def __init__(self, pid=None, interval=0.25):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.stop_event = threading.Event()
        self.gpu = shutil.which("nvidia-smi") is not None
        self.baseline = self._gpu_used() if self.gpu else 0
        self.peak = 0

    def _gpu_used(self):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10).stdout
            return sum(int(x) for x in out.split() if x.strip().isdigit())
        except (OSError, subprocess.SubprocessError, ValueError):
            return 0

    def _rss(self):
        if not self.pid:
            return 0
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) // 1024
        except OSError:
            pass
        return 0

    def sample(self):
        value = self._gpu_used() - self.baseline if self.gpu else self._rss()
        self.peak = max(self.peak, value)

    def run(self):
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(self.interval)

    def finish(self):
        self.sample()
        self.stop_event.set()
        self.join(timeout=15)
        return {"peak_mib": self.peak, "what": "device memory over baseline (nvidia-smi)" if self.gpu
                else "host peak RSS (no GPU)"}


def run_command(cmd, timeout, log, env=None):
    """Runs cmd with a timeout, sampling memory; returns (rc, stdout, stderr, seconds, memory)."""
    log.write("$ " + " ".join(cmd))
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
    except OSError as e:
        log.write("  cannot start: %s" % e)
        return 127, "", str(e), 0.0, None
    sampler = MemorySampler(proc.pid)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=max(1, timeout))
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = "timeout"
    memory = sampler.finish()
    seconds = time.monotonic() - t0
    log.write("  rc=%s in %.1f s; stderr tail:\n%s" % (rc, seconds, tail(err, 1500)))
    return rc, out, err, seconds, memory


def parse_json_array(text):
    """The JSON array in a tool's stdout (llama-bench may print other lines around it)."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        raise ValueError("no JSON array in the output")
    return json.loads(text[start:end + 1])


# ---- what is there --------------------------------------------------------------------------------

def gufo_gpu_provider(gufo, log):
    """(provider id or None, reason): an available qwen3 provider other than the CPU one."""
    if not gufo or not os.access(gufo, os.X_OK):
        return None, "no gufo binary at %s" % gufo
    try:
        out = subprocess.run([gufo, "diagnose", "--json"], capture_output=True, text=True, timeout=60).stdout
        report = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return None, "gufo diagnose --json failed: %s" % e
    reasons = []
    for ext in report.get("extensions", []):
        for p in ext.get("providers", []):
            if "gguf:qwen3" not in p.get("keys", []) or p.get("id") == "qwen-cpu":
                continue
            if p.get("available"):
                return p["id"], None
            reasons.append("%s unavailable: %s" % (p.get("id"), p.get("reason")))
    reason = "; ".join(reasons) if reasons else "gufo has no GPU provider for qwen3 yet (only qwen-cpu)"
    log.write("gufo: " + reason)
    return None, reason


def gufo_serving_provider(args, model, budget, log):
    """(provider id, why) that gufo picks for `model`: one decode step, with the selection on stderr."""
    rc, out, err, _, _ = run_command([args.gufo, "bench", "--model", model, "-p", "0", "-n", "1", "-r", "1",
                                      "--json", "--verbose"], min(180, budget.left()), log)
    if rc != 0:
        return None, "gufo bench failed (rc %s): %s" % (rc, (tail(err, 300).strip().splitlines() or [""])[-1])
    try:
        serving = parse_json_array(out)[0].get("provider")
    except (ValueError, IndexError, AttributeError) as e:
        return None, "unreadable gufo bench output: %s" % e
    # --verbose lists each candidate as "  - ID (extension X): accepted" or ": <why it declined>".
    declined = [line.strip().lstrip("- ") for line in err.splitlines()
                if line.startswith("  - ") and not line.rstrip().endswith(": accepted")]
    # qwen-cpu logs its numerics and the runtime's CPU kernel family at load (shown with --verbose).
    for line in err.splitlines():
        if "CPU kernels" in line and "qwen-cpu: " in line:
            args.gufo_cpu_kernels_seen = line.split("qwen-cpu: ", 1)[1].strip()
    return serving, "; ".join(declined) or "see logs.txt"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def load_average():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return None


def machine_facts(args):
    facts = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "host": socket.gethostname(), "cpus": os.cpu_count(), "cpu": cpu_model(),
             "load_at_start": load_average()}
    if shutil.which("nvidia-smi"):
        try:
            facts["gpu"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    if args.gufo and os.access(args.gufo, os.X_OK):
        try:
            facts["gufo_version"] = subprocess.run([args.gufo, "--version"], capture_output=True, text=True,
                                                   timeout=20).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            pass
    return facts


# ---- bandwidth --------------------------------------------------------------------------------------

def measure_cpu_bandwidth(args, log, workdir):
    """membw_cpu.c compiled with the system C compiler (native flags: it is a probe, not shipped code),
    run with the benchmark's thread count. The CPU roofline divides by read_gbs: a decode step reads
    its weights, it does not copy them."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return {"error": "no C compiler for membw_cpu.c"}
    exe = os.path.join(workdir, "membw_cpu")
    rc, _, err, _, _ = run_command([cc, "-O2", "-march=native", "-pthread", "-o", exe,
                                    os.path.join(HERE, "membw_cpu.c")], 120, log)
    if rc != 0:
        return {"error": "membw_cpu.c did not compile: %s" % tail(err, 200).strip()}
    threads = args.threads or os.cpu_count() or 1
    rc, out, err, _, _ = run_command([exe, str(threads), "2048"], 300, log)
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        return {"error": "membw_cpu (rc %s): %s" % (rc, e)}
    result["how"] = "membw_cpu.c, %d threads, 2 GiB" % threads
    result["roofline_gbs"] = result["read_gbs"]
    return result


def measure_bandwidth(args, log, workdir):
    """{"copy_gbs", "read_gbs", "roofline_gbs", "how"} or {"error"}: roofline_gbs is the roofline's
    denominator (the GPU's copy rate, like the brief's HBM figure; the CPU's read rate)."""
    if args.bandwidth_gbs:
        return {"copy_gbs": args.bandwidth_gbs, "read_gbs": args.bandwidth_gbs, "roofline_gbs": args.bandwidth_gbs,
                "how": "given (--bandwidth-gbs)"}
    if args.cpu:
        return measure_cpu_bandwidth(args, log, workdir)
    result = measure_gpu_bandwidth(args, log, workdir)
    if "copy_gbs" in result:
        result["roofline_gbs"] = result["copy_gbs"]
    return result


def measure_gpu_bandwidth(args, log, workdir):
    """{"copy_gbs", "read_gbs", "how"} or {"error"}."""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    reasons = []
    if nvcc and shutil.which("nvidia-smi"):
        exe = os.path.join(workdir, "membw")
        for arch in ("-arch=native", "-arch=sm_90"):
            rc, _, err, _, _ = run_command([nvcc, "-O3", arch, "-o", exe, os.path.join(HERE, "membw.cu")], 180, log)
            if rc == 0:
                break
        if rc == 0:
            rc, out, err, _, _ = run_command([exe], 120, log)
            if rc == 0:
                try:
                    result = json.loads(out.strip().splitlines()[-1])
                    result["how"] = "membw.cu (nvcc)"
                    return result
                except (ValueError, IndexError) as e:
                    reasons.append("membw output: %s" % e)
            else:
                reasons.append("membw failed (%s)" % rc)
        else:
            reasons.append("nvcc failed on membw.cu")
    else:
        reasons.append("no nvcc/nvidia-smi")
    probe = ("import torch,time,json\n"
             "n=1<<30\na=torch.empty(n,dtype=torch.uint8,device='cuda');b=torch.empty_like(a)\n"
             "for _ in range(3): b.copy_(a)\n"
             "torch.cuda.synchronize();t=time.perf_counter()\n"
             "for _ in range(20): b.copy_(a)\n"
             "torch.cuda.synchronize();dt=(time.perf_counter()-t)/20\n"
             "print(json.dumps({'copy_gbs':2*n/dt/1e9,'read_gbs':None}))\n")
    try:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        if out.returncode == 0:
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result["how"] = "torch device-to-device copy"
            return result
        reasons.append("torch probe: " + tail(out.stderr, 200).strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        reasons.append("torch probe: %s" % e)
    return {"error": "; ".join(reasons)}


# ---- bench -------------------------------------------------------------------------------------------

def bench_groups(args):
    """Test groups in priority order: [(name, [(kind, n, depth)])]. kind is 'pp' or 'tg'."""
    short = [("tg", args.decode, 0)] + [("pp", p, 0) for p in args.prefill if p <= 4096]
    depth = [("tg", args.decode, d) for d in args.depths if d > 0]
    long_ = [("pp", p, 0) for p in args.prefill if p > 4096]
    return [g for g in (("short", short), ("depth", depth), ("long", long_)) if g[1]]


def test_name(kind, n, depth):
    return "%s%d@d%d" % (kind, n, depth)


def llama_bench_commands(args, model, tests, reps, warmup=True):
    """llama-bench runs a cross product of -p/-n/-d; one command per (kind, depth set)."""
    exe = os.path.join(args.llama_cpp, "llama-bench")
    common = ["-m", model, "-r", str(reps), "-fa", "1", "-ngl", str(args.ngl), "-o", "json"]
    if not warmup:  # a 32k/128k prefill needs no warm-up run: it would double the time for nothing
        common.append("--no-warmup")
    if args.threads:
        common += ["-t", str(args.threads)]
    cmds = []
    pp = sorted({n for k, n, d in tests if k == "pp"})
    pp_depths = ",".join(map(str, sorted({d for k, n, d in tests if k == "pp"})))
    # Short prefills share one command; each long one gets its own, so a timeout loses only itself.
    short = [n for n in pp if n <= 4096]
    for lengths in ([short] if short else []) + [[n] for n in pp if n > 4096]:
        cmds.append([exe] + common + ["-p", ",".join(map(str, lengths)), "-n", "0", "-d", pp_depths])
    tg = sorted({n for k, n, d in tests if k == "tg"})
    tg_depths = sorted({d for k, n, d in tests if k == "tg"})
    if tg:
        cmds.append([exe] + common + ["-p", "0", "-n", ",".join(map(str, tg)), "-d",
                                      ",".join(map(str, tg_depths))])
    return cmds


def gufo_bench_commands(args, model, tests, reps, warmup=True):
    """gufo bench takes one -p and one -n per run, and a list of depths."""
    common = [args.gufo, "bench", "--model", model, "-r", str(reps), "--json", "--verbose"]
    if args.threads:
        common += ["--threads", str(args.threads)]
    cmds = []
    for n in sorted({n for k, n, d in tests if k == "pp"}):
        depths = sorted({d for k, m, d in tests if k == "pp" and m == n})
        cmds.append(common + ["-p", str(n), "-n", "0", "-d", ",".join(map(str, depths))])
    tg = sorted({n for k, n, d in tests if k == "tg"})
    for n in tg:
        depths = sorted({d for k, m, d in tests if k == "tg" and m == n})
        cmds.append(common + ["-p", "0", "-n", str(n), "-d", ",".join(map(str, depths))])
    return cmds


def record_bench_rows(rows, engine, results, memory, seconds):
    for row in rows:
        n_prompt, n_gen, depth = int(row.get("n_prompt", 0)), int(row.get("n_gen", 0)), int(row.get("n_depth", 0))
        kind, n = ("pp", n_prompt) if n_prompt else ("tg", n_gen)
        entry = {"tok_s": row.get("avg_ts"), "stddev": row.get("stddev_ts"), "samples": row.get("samples_ts"),
                 "memory": memory, "run_seconds": round(seconds, 1)}
        for extra in ("provider", "build_commit", "build_number", "gpu_info", "backends", "host_overhead",
                      "n_ubatch", "n_batch", "flash_attn", "type_k"):
            if extra in row:
                entry[extra] = row[extra]
        results.setdefault(test_name(kind, n, depth), {})[engine] = entry


def run_bench_group(args, engine, model, tests, reps, results, budget, log, warmup=True):
    """Runs one engine over a group of tests; a failure or timeout marks its tests."""
    build = llama_bench_commands if engine == "llama.cpp" else gufo_bench_commands
    commands = build(args, model, tests, reps, warmup)
    for cmd in commands:
        wanted = [t for t in tests if test_name(*t) in command_tests(cmd, engine)]
        if budget.left() < args.min_run_s:
            for t in wanted:
                results.setdefault(test_name(*t), {}).setdefault(engine, {"error": "not run: time budget spent"})
            continue
        timeout = min(args.timeout_s, budget.left())
        rc, out, err, seconds, memory = run_command(cmd, timeout, log)
        if rc == 0 and engine == "gufo" and memory is not None:
            # gufo bench --verbose reports its own peaks ("memory: host peak X MiB, device peak Y MiB").
            found = re.search(r"memory: host peak ([0-9.]+) MiB, device peak ([0-9.]+) MiB", err)
            if found:
                memory = dict(memory, gufo_host_peak_mib=float(found.group(1)),
                              gufo_device_peak_mib=float(found.group(2)))
        if rc == 0:
            try:
                record_bench_rows(parse_json_array(out), engine, results, memory, seconds)
                continue
            except (ValueError, TypeError) as e:
                reason = "unreadable output: %s" % e
        else:
            reason = "timed out after %.0f s" % seconds if rc == "timeout" else \
                "failed (rc %s): %s" % (rc, (tail(err, 300).strip().splitlines() or [""])[-1])
        for t in wanted:
            results.setdefault(test_name(*t), {})[engine] = {"error": reason, "timed_out": rc == "timeout"}


def needs_run(entry, args):
    """Whether a cell (an engine's result for one test) is still to measure: missing, or failed --
    except a timeout, which is a result (--retry-timeouts runs it again, e.g. with a longer --timeout-s)."""
    if not entry:
        return True
    if "error" not in entry:
        return False
    return not entry.get("timed_out") or args.retry_timeouts


def command_tests(cmd, engine):
    """The test names one command produces (to mark them when it fails)."""
    def value(flag):
        return cmd[cmd.index(flag) + 1] if flag in cmd else "0"
    ps = [int(x) for x in value("-p").split(",") if x]
    ns = [int(x) for x in value("-n").split(",") if x]
    ds = [int(x) for x in value("-d").split(",") if x]
    names = set()
    for d in ds:
        names.update(test_name("pp", p, d) for p in ps if p)
        names.update(test_name("tg", n, d) for n in ns if n)
    return names


# ---- serve ------------------------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base, proc, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return "exited with %s before it was ready" % proc.returncode
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return None
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    return "not healthy after %.0f s" % timeout


def prompt_text(index, n_tokens):
    """About n_tokens tokens of text, different per stream so no prefix cache can share them."""
    return "Request %d. " % index + " ".join("alpha%d" % ((index * 7919 + i) % 1000) for i in range(n_tokens // 3))


def one_stream(base, index, args, out):
    body = {"messages": [{"role": "user", "content": prompt_text(index, args.serve_prompt)}],
            "max_tokens": args.serve_max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    first, chunks, usage, error = None, 0, None, None
    try:
        with urllib.request.urlopen(req, timeout=args.timeout_s) as r:
            for raw in r:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                event = json.loads(data)
                if "error" in event:
                    error = str(event["error"])[:200]
                    break
                if event.get("usage"):
                    usage = event["usage"]
                for choice in event.get("choices", []):
                    delta = choice.get("delta", {})
                    if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
                        chunks += 1
                        if first is None:
                            first = time.monotonic()
    except (urllib.error.URLError, OSError, ValueError) as e:
        error = str(e)[:200]
    end = time.monotonic()
    out[index] = {"start": t0, "end": end, "ttft": (first - t0) if first else None, "chunks": chunks,
                  "completion_tokens": (usage or {}).get("completion_tokens", chunks),
                  "prompt_tokens": (usage or {}).get("prompt_tokens"), "error": error}


def run_streams(base, n_streams, args):
    out = [None] * n_streams
    threads = [threading.Thread(target=one_stream, args=(base, i, args, out)) for i in range(n_streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r["error"] for r in out if r["error"]]
    start, end = min(r["start"] for r in out), max(r["end"] for r in out)
    tokens = sum(r["completion_tokens"] or 0 for r in out)
    ttfts = sorted(r["ttft"] for r in out if r["ttft"] is not None)
    result = {"streams": n_streams, "tok_s": tokens / (end - start) if end > start else None,
              "completion_tokens": tokens, "seconds": round(end - start, 3),
              "ttft_mean_s": sum(ttfts) / len(ttfts) if ttfts else None,
              "ttft_max_s": ttfts[-1] if ttfts else None,
              "prompt_tokens": out[0]["prompt_tokens"]}
    if errors:
        result["error"] = "%d of %d streams failed: %s" % (len(errors), n_streams, errors[0])
    return result


def server_command(args, engine, model, port, sessions):
    context = args.serve_prompt + args.serve_max_tokens + 256
    if engine == "llama.cpp":
        cmd = [os.path.join(args.llama_cpp, "llama-server"), "-m", model, "--host", "127.0.0.1", "--port", str(port),
               "-np", str(sessions), "-c", str(context * sessions), "-ngl", str(args.ngl), "-fa", "on",
               "--no-webui"]
        if args.threads:
            cmd += ["-t", str(args.threads)]
        return cmd
    cmd = [args.gufo, "serve", "llm", "--model", model, "--port", str(port), "--sessions", str(sessions),
           "--context", str(context), "--queue", str(max(64, sessions)), "--temperature", "0"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    return cmd


def run_serve(args, engine, model, results, budget, log):
    names = ["streams%d" % n for n in args.streams]
    if budget.left() < args.min_run_s * 2:
        for name in names:
            results.setdefault(name, {})[engine] = {"error": "not run: time budget spent"}
        return
    port = free_port()
    cmd = server_command(args, engine, model, port, max(args.streams))
    log.write("$ " + " ".join(cmd))
    server_log = tempfile.TemporaryFile(mode="w+", errors="replace")
    try:
        proc = subprocess.Popen(cmd, stdout=server_log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    except OSError as e:
        for name in names:
            results.setdefault(name, {})[engine] = {"error": "cannot start server: %s" % e}
        return
    sampler = MemorySampler(proc.pid)
    sampler.start()
    base = "http://127.0.0.1:%d" % port
    problem = wait_healthy(base, proc, min(args.timeout_s, budget.left()))
    try:
        for n, name in zip(args.streams, names):
            if problem:
                results.setdefault(name, {})[engine] = {"error": "server " + problem}
                continue
            if budget.left() < args.min_run_s:
                results.setdefault(name, {})[engine] = {"error": "not run: time budget spent"}
                continue
            if args.serve_warmup:
                run_streams(base, 1, argparse.Namespace(**{**vars(args), "serve_max_tokens": 4}))
            r = run_streams(base, n, args)
            log.write("  %s %s: %s" % (engine, name, json.dumps(r)))
            results.setdefault(name, {})[engine] = r
            if proc.poll() is not None:
                problem = "exited with %s during the run" % proc.returncode
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        memory = sampler.finish()
        server_log.seek(0)
        log.write("  server output tail:\n" + tail(server_log.read(), 1500))
        server_log.close()
        for name in names:
            entry = results.get(name, {}).get(engine)
            if entry is not None and "error" not in entry:
                entry["memory"] = memory


def run_batched(args, model, res, budget, log):
    """llama-batched-bench at the stream counts: llama.cpp's engine alone, without HTTP (reference only)."""
    if budget.left() < args.min_run_s:
        res["batched"] = {"error": "not run: time budget spent"}
        return
    pp, tg, pl = args.serve_prompt, args.serve_max_tokens, max(args.streams)
    cmd = [os.path.join(args.llama_cpp, "llama-batched-bench"), "-m", model, "-c", str(pl * (pp + tg) + 64),
           "-b", "2048", "-ub", "512", "-npp", str(pp), "-ntg", str(tg), "-npl", ",".join(map(str, args.streams)),
           "-fa", "on", "-ngl", str(args.ngl), "--output-format", "jsonl"]
    if args.threads:
        cmd += ["-t", str(args.threads)]
    rc, out, err, seconds, memory = run_command(cmd, min(args.timeout_s, budget.left()), log)
    rows = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{") and "speed_tg" in line:
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    if rc != 0 or not rows:
        res["batched"] = {"error": "timed out" if rc == "timeout" else "failed (rc %s): %s" % (
            rc, (tail(err, 300).strip().splitlines() or [""])[-1])}
        return
    res["batched"] = {"rows": [{"sequences": r["pl"], "prompt": r["pp"], "generated": r["tg"],
                                "decode_tok_s": r["speed_tg"], "prefill_tok_s": r["speed_pp"]} for r in rows],
                      "memory": memory}


# ---- report -------------------------------------------------------------------------------------------------

def fmt(x, digits=1):
    if x is None:
        return "—"
    if isinstance(x, (int, float)):
        return ("%." + str(digits) + "f") % x
    return str(x)


def cell(entry, key="tok_s"):
    if not entry:
        return "not run"
    if "error" in entry:  # a table cell: no pipes, no line breaks, not a page long
        text = " ".join(str(entry["error"]).replace("|", "/").split())
        return text if len(text) <= 160 else text[:157] + "…"
    return fmt(entry.get(key))


def ratio_cell(g, l, target):
    if not g or not l or "error" in g or "error" in l or not g.get("tok_s") or not l.get("tok_s"):
        return "—", "—"
    r = g["tok_s"] / l["tok_s"]
    return "%.2f×" % r, ("yes" if r >= target else "**no**") if target else "—"


def render_markdown(report):
    lines = ["# Qwen3 benchmark: gufo vs llama.cpp", ""]
    m = report["machine"]
    target = targets_of(report)
    lines.append("- machine: %s; %s CPUs (%s); %s" % (m.get("gpu", "no GPU (CPU run)"), m.get("cpus"),
                                                      m.get("cpu", "?"), m.get("date")))
    if m.get("load_at_start") or m.get("load_at_end"):
        lines.append("- load average (1, 5, 15 min) at start / end: %s / %s" % (m.get("load_at_start", "?"),
                                                                              m.get("load_at_end", "?")))
    if m.get("gufo_cpu_kernels"):
        lines.append("- gufo qwen-cpu: %s" % m["gufo_cpu_kernels"])
    lines.append("- gufo: %s (provider %s)" % (m.get("gufo_version", "?"),
                                               report.get("gufo_provider") or "none on this machine"))
    if report.get("gufo_note"):
        lines.append("- gufo note: %s" % report["gufo_note"])
    lines.append("- llama.cpp: %s" % report.get("llama_cpp_build", "?"))
    bw = report.get("bandwidth", {})
    lines.append("- bandwidth: %s" % (("copy %.0f GB/s, read %s GB/s (%s); the roofline divides by %.1f GB/s" % (
        bw["copy_gbs"], fmt(bw.get("read_gbs"), 1), bw.get("how"), bw.get("roofline_gbs") or bw["copy_gbs"]))
        if bw.get("copy_gbs") else "not measured: %s" % bw.get("error", "?")))
    lines.append("- command: `%s`" % report["command"])
    lines.append("")
    for t in report["types"]:
        res = report["results"].get(t, {})
        info = res.get("model")
        lines.append("## %s" % t.upper())
        lines.append("")
        if not info:
            lines.append(res.get("error", "not run"))
            lines.append("")
            continue
        lines.append("`%s`: %.2f GB of tensors, %d layers, hidden %d, %d/%d heads; gufo serves it with %s" % (
            os.path.basename(info["file"]), info["tensor_bytes"] / 1e9, info["layers"], info["hidden"],
            info["heads"], info["kv_heads"], res.get("gufo_serving_provider") or "—"))
        lines.append("")
        lines.append("| test | llama.cpp tok/s | gufo tok/s | gufo / llama.cpp | target | met |")
        lines.append("|---|---|---|---|---|---|")
        tests = res.get("tests", {})
        for name in sorted(tests, key=sort_key):
            e = tests[name]
            l, g = e.get("llama.cpp"), e.get("gufo")
            if name.startswith("pp"):
                goal = target["prefill"]
            elif name.startswith("tg") and name.endswith("@d0"):
                goal = target["decode"]
            elif name.startswith("streams") and name != "streams1":
                goal = target["streams"]
            else:
                goal = None
            r, met = ratio_cell(g, l, goal)
            label = name if not name.startswith("streams") else "%s streams aggregate" % name[7:]
            lines.append("| %s | %s | %s | %s | %s | %s |" % (label, cell(l), cell(g), r,
                                                             "≥ %.1f×" % goal if goal else "—", met))
        streams = [n for n in tests if n.startswith("streams")]
        if streams:
            lines.append("")
            lines.append("| streams | llama-server TTFT mean / max s | gufo serve TTFT mean / max s | "
                         "prompt tokens | generated tokens (llama / gufo) |")
            lines.append("|---|---|---|---|---|")
            for name in sorted(streams, key=sort_key):
                l, g = tests[name].get("llama.cpp") or {}, tests[name].get("gufo") or {}
                lines.append("| %s | %s / %s | %s / %s | %s | %s / %s |" % (
                    name[7:], fmt(l.get("ttft_mean_s"), 3), fmt(l.get("ttft_max_s"), 3),
                    fmt(g.get("ttft_mean_s"), 3), fmt(g.get("ttft_max_s"), 3),
                    l.get("prompt_tokens") or g.get("prompt_tokens") or "—",
                    l.get("completion_tokens", "—"), g.get("completion_tokens", "—")))
        roof = res.get("roofline", [])
        if roof:
            lines.append("")
            kv = report.get("kv_bytes", {})
            lines.append("| batch-1 decode | GB / token (llama.cpp / gufo) | roofline tok/s (llama.cpp / gufo) | "
                         "llama.cpp of its roofline | gufo of its roofline | target |")
            lines.append("|---|---|---|---|---|---|")
            for r in roof:
                b, c, f = r["bytes_per_token"], r["roofline_tok_s"], r["fraction"]
                lines.append("| %s | %.2f / %.2f | %s / %s | %s | %s | ≥ %d%% |" % (
                    r["test"], b["llama.cpp"] / 1e9, b["gufo"] / 1e9, fmt(c["llama.cpp"]), fmt(c["gufo"]),
                    pct(f["llama.cpp"]), pct(f["gufo"]), target["roofline"] * 100))
            lines.append("")
            lines.append("Bytes per token: every weight once, one embedding row, and the cached keys/values at "
                         "%s bytes per element for llama.cpp and %s for gufo (`--kv-bytes`, `--gufo-kv-bytes`)." % (
                             kv.get("llama.cpp", "?"), kv.get("gufo", "?")))
        batched = res.get("batched")
        if batched:
            lines.append("")
            if "error" in batched:
                lines.append("llama-batched-bench (llama.cpp's engine alone, no HTTP): %s" % batched["error"])
            else:
                lines.append("llama-batched-bench (llama.cpp's engine alone, no HTTP; reference for the streams): " +
                             ", ".join("%d × (%d + %d): decode %.1f tok/s, prefill %.1f tok/s" % (
                                 r["sequences"], r["prompt"], r["generated"], r["decode_tok_s"], r["prefill_tok_s"])
                                 for r in batched["rows"]))
        mem = res.get("memory", {})
        if mem:
            lines.append("")
            lines.append("Peak memory (MiB, %s): %s" % (mem.get("what", ""), ", ".join(
                "%s %s" % (k, v) for k, v in sorted(mem.items()) if k != "what")))
        lines.append("")
    return "\n".join(lines) + "\n"


def pct(x):
    return "—" if x is None else "%.0f%%" % (100 * x)


def sort_key(name):
    order = {"tg": 0, "pp": 1, "st": 2}
    kind = name[:2]
    if kind == "st":
        return (2, int(name[7:]), 0)
    n, _, d = name[2:].partition("@d")
    return (order.get(kind, 3), int(d or 0), int(n))


def summarize(report):
    """Roofline fractions and peak memory per type from the raw results."""
    bw = report.get("bandwidth", {}).get("roofline_gbs") or report.get("bandwidth", {}).get("copy_gbs")
    for t, res in report["results"].items():
        info = res.get("model")
        if not info:
            continue
        roof = []
        for name, e in res.get("tests", {}).items():
            if not name.startswith("tg"):
                continue
            depth = int(name.partition("@d")[2])
            row = {"test": name, "bytes_per_token": {}, "roofline_tok_s": {}, "fraction": {}}
            for engine in ("llama.cpp", "gufo"):
                # Each engine's own K/V element size: the bytes it really moves.
                kv_bytes = report.get("kv_bytes", {}).get(engine, info["kv_bytes_per_element"])
                b = gguf_info.bytes_per_decoded_token(info, depth, kv_bytes)
                ceiling = bw * 1e9 / b if bw else None
                v = (e.get(engine) or {}).get("tok_s")
                row["bytes_per_token"][engine], row["roofline_tok_s"][engine] = b, ceiling
                row["fraction"][engine] = v / ceiling if v and ceiling else None
            roof.append(row)
        res["roofline"] = sorted(roof, key=lambda r: sort_key(r["test"]))
        mem = {}
        for name, e in res.get("tests", {}).items():
            for engine in ("llama.cpp", "gufo"):
                m = (e.get(engine) or {}).get("memory")
                if m:
                    mem["what"] = m["what"]
                    key = "%s %s" % (engine, "serve" if name.startswith("streams") else "bench")
                    mem[key] = max(mem.get(key, 0), m["peak_mib"])
                    for own, label in (("gufo_device_peak_mib", "gufo bench's own report: device"),
                                       ("gufo_host_peak_mib", "gufo bench's own report: host")):
                        if m.get(own) is not None:
                            mem[label] = max(mem.get(label, 0), m[own])
        res["memory"] = mem


def write_report(report, out_dir):
    summarize(report)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(render_markdown(report))


# ---- the run ---------------------------------------------------------------------------------------------------

def model_path(args, t):
    return os.path.join(args.models, "qwen3-%s-%s.gguf" % (args.shape, t))


def compare(args):
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "logs.txt"))
    budget = Budget(args.budget_s)
    report = {"command": " ".join(sys.argv), "types": args.types, "results": {},
              "kv_bytes": {"llama.cpp": args.kv_bytes, "gufo": args.gufo_kv_bytes},
              "mode": "cpu" if args.cpu else "gpu"}
    if args.resume and os.path.exists(args.resume):
        with open(args.resume) as f:
            old = json.load(f)
        report["results"] = old.get("results", {})
        report["types"] = list(dict.fromkeys(old.get("types", []) + args.types))
        if old.get("bandwidth", {}).get("copy_gbs"):
            report["bandwidth"] = old["bandwidth"]
    report["machine"] = machine_facts(args)
    log.write("compare.py: %s" % report["command"])

    llama_ok = args.llama_cpp and os.access(os.path.join(args.llama_cpp, "llama-bench"), os.X_OK)
    llama_reason = None if llama_ok else ("no llama-bench in %s" % args.llama_cpp if args.llama_cpp
                                          else "no llama.cpp build given (--llama-cpp)")
    provider, gufo_reason = gufo_gpu_provider(args.gufo, log)
    if not provider and args.gufo_cpu and args.gufo and os.access(args.gufo, os.X_OK):
        provider, gufo_reason = "qwen-cpu", None
        report["gufo_note"] = "--gufo-cpu: gufo runs on its CPU provider"
    report["gufo_provider"] = provider
    if gufo_reason:
        report["gufo_note"] = gufo_reason

    if "roofline" in args.parts and "bandwidth" not in report:
        with tempfile.TemporaryDirectory() as work:
            report["bandwidth"] = measure_bandwidth(args, log, work)

    engines = []
    if llama_ok:
        engines.append("llama.cpp")
    if provider:
        engines.append("gufo")

    for t in args.types:
        res = report["results"].setdefault(t, {})
        path = model_path(args, t)
        if not os.path.exists(path):
            res["error"] = "no model file %s" % path
            continue
        res["model"] = gguf_info.summary(path, args.kv_bytes)
        tests = res.setdefault("tests", {})
        # A built GPU provider can still decline a file or a machine (no usable GPU): then qwen-cpu
        # would serve it, and hours of CPU runs would pass for gufo's numbers. One decode step says who serves.
        type_gufo_reason = gufo_reason
        if provider and budget.left() > args.min_run_s:
            serving, why = gufo_serving_provider(args, path, budget, log)
            res["gufo_serving_provider"] = serving
            if serving is None:
                type_gufo_reason = why
            elif serving != provider and (args.cpu or not args.gufo_cpu):
                type_gufo_reason = "gufo chose %s for this file, not %s: %s" % (serving, provider, why)
        # An engine that cannot run says why in each of its cells (numbers from --resume stay).
        names = [test_name(*x) for g in (bench_groups(args) if "bench" in args.parts else []) for x in g[1]]
        names += ["streams%d" % n for n in (args.streams if "serve" in args.parts else [])]
        type_engines = [e for e in engines if e != "gufo" or not type_gufo_reason]
        for engine, reason in (("llama.cpp", llama_reason), ("gufo", type_gufo_reason)):
            for name in names if reason else []:
                entry = tests.setdefault(name, {}).get(engine)
                if not entry or "error" in entry:
                    tests[name][engine] = {"error": reason}

        groups = bench_groups(args) if "bench" in args.parts else []
        plan = []
        if groups:
            plan.append(("bench", groups[0]))
        if "serve" in args.parts and args.streams:
            plan.append(("serve", None))
        plan += [("bench", g) for g in groups[1:]]
        for part, group in plan:
            if part == "serve" and "batched" in args.parts and llama_ok and \
                    (not res.get("batched") or "error" in res["batched"]) and \
                    os.access(os.path.join(args.llama_cpp, "llama-batched-bench"), os.X_OK):
                run_batched(args, path, res, budget, log)
            for engine in type_engines:
                if part == "bench":
                    name, group_tests = group
                    todo = [x for x in group_tests if needs_run(tests.get(test_name(*x), {}).get(engine), args)]
                    if todo:
                        reps = args.reps_long if name == "long" else args.reps
                        run_bench_group(args, engine, path, todo, reps, tests, budget, log, warmup=name != "long")
                else:
                    names = ["streams%d" % n for n in args.streams]
                    if any(needs_run(tests.get(n, {}).get(engine), args) for n in names):
                        run_serve(args, engine, path, tests, budget, log)
                write_report(report, args.out)
        write_report(report, args.out)
    builds = {e.get("build_commit") for res in report["results"].values() for x in res.get("tests", {}).values()
              for k, e in x.items() if k == "llama.cpp" and isinstance(e, dict) and e.get("build_commit")}
    report["llama_cpp_build"] = ", ".join(sorted(b for b in builds if b)) or (llama_reason or "?")
    report["machine"]["load_at_end"] = load_average()
    if getattr(args, "gufo_cpu_kernels_seen", None):
        report["machine"]["gufo_cpu_kernels"] = args.gufo_cpu_kernels_seen
    write_report(report, args.out)
    log.write("compare.py: wrote %s/results.json and results.md (%.0f s of budget left)" % (args.out, budget.left()))
    return 0


# ---- self-test ------------------------------------------------------------------------------------------------

def self_test(args):
    """Checks parsing and arithmetic on a tiny model; then a short CPU run when --llama-cpp is given."""
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL: " + what, file=sys.stderr)

    args.shape = "tiny"
    if not args.qwen_random_model or not args.vocab or not os.path.exists(args.vocab):
        print("SKIP: --self-test needs --qwen-random-model and an existing --vocab", file=sys.stderr)
        return 77
    os.makedirs(args.models, exist_ok=True)
    for t in TYPES:
        path = model_path(args, t)
        rc = subprocess.run([args.qwen_random_model, "--shape", "tiny", "--type", t, "--vocab", args.vocab,
                             "--out", path, "--threads", "2"], capture_output=True, text=True).returncode
        check(rc == 0, "qwen_random_model %s" % t)
    info = gguf_info.summary(model_path(args, "q4_k_m"))
    check(info["layers"] == 2 and info["hidden"] == 256 and info["kv_heads"] == 2 and info["key_length"] == 64,
          "gguf_info shape")
    check(info["tied_embeddings"], "tied embeddings seen")
    check(info["tensor_bytes"] + 4096 < os.path.getsize(model_path(args, "q4_k_m")), "tensor bytes below file size")
    check(info["tensor_types"]["blk.1.ffn_down.weight"] == "q6_K", "q4_k_m recipe read back")
    # 2 layers x 2 kv heads x (64 + 64) x 2 bytes per position
    check(info["kv_bytes_per_position"] == 1024, "kv bytes per position")
    check(gguf_info.bytes_per_decoded_token(info, 99) == info["tensor_bytes"] + 100 * 1024, "bytes per token")
    bf16 = gguf_info.summary(model_path(args, "bf16"))
    check(bf16["tensor_bytes"] == 151936 * 256 * 2 + 2 * (2 * 256 * 256 * 2 + 2 * 128 * 256 * 2 +
                                                          3 * 512 * 256 * 2 + (2 * 256 + 2 * 64) * 4) + 256 * 4,
          "bf16 tensor bytes")
    # The command builders and the report on made-up numbers.
    ns = argparse.Namespace(llama_cpp="/x", gufo="/g", threads=0, ngl=99, prefill=[512, 4096, 32768],
                            depths=[0, 4096], decode=128)
    groups = dict(bench_groups(ns))
    check(groups["short"] == [("tg", 128, 0), ("pp", 512, 0), ("pp", 4096, 0)], "short group")
    cmds = llama_bench_commands(ns, "m.gguf", groups["short"], 3)
    check(command_tests(cmds[0], "llama.cpp") == {"pp512@d0", "pp4096@d0"}, "llama-bench pp command")
    check(command_tests(cmds[1], "llama.cpp") == {"tg128@d0"}, "llama-bench tg command")
    check(len(gufo_bench_commands(ns, "m.gguf", groups["short"], 3)) == 3, "gufo bench commands")
    long_cmds = llama_bench_commands(ns, "m.gguf", groups["long"], 1, warmup=False)
    check([command_tests(c, "llama.cpp") for c in long_cmds] == [{"pp32768@d0"}] and "--no-warmup" in long_cmds[0],
          "one llama-bench command per long prefill, without warm-up")
    # --resume: missing and failed cells run again; a timeout is a result unless --retry-timeouts.
    keep, retry = argparse.Namespace(retry_timeouts=False), argparse.Namespace(retry_timeouts=True)
    timed_out = {"error": "timed out after 100 s", "timed_out": True}
    check(needs_run(None, keep) and needs_run({"error": "failed (rc 1): x"}, keep), "missing and failed cells run")
    check(not needs_run({"tok_s": 1.0}, keep) and not needs_run(timed_out, keep), "measured and timed-out cells kept")
    check(needs_run(timed_out, retry), "--retry-timeouts runs timed-out cells")
    report = {"command": "test", "types": ["q4_k_m"], "machine": {"cpus": 2}, "bandwidth": {"copy_gbs": 100.0},
              "results": {"q4_k_m": {"model": info, "tests": {
                  "tg128@d0": {"llama.cpp": {"tok_s": 100.0}, "gufo": {"tok_s": 250.0}},
                  "pp512@d0": {"llama.cpp": {"tok_s": 1000.0}, "gufo": {"error": "failed (rc 1): boom"}},
                  "streams8": {"llama.cpp": {"tok_s": 700.0, "completion_tokens": 1024},
                               "gufo": {"tok_s": 1000.0, "completion_tokens": 1024}}}}}}
    summarize(report)
    md = render_markdown(report)
    check("| tg128@d0 | 100.0 | 250.0 | 2.50× | ≥ 2.0× | yes |" in md, "decode row")
    check("| 8 streams aggregate | 700.0 | 1000.0 | 1.43× | ≥ 2.0× | **no** |" in md, "streams row")
    check("failed (rc 1): boom" in md, "error shown")
    report["kv_bytes"] = {"llama.cpp": 2, "gufo": 4}
    summarize(report)
    roof = report["results"]["q4_k_m"]["roofline"][0]
    check(abs(roof["roofline_tok_s"]["llama.cpp"] - 100e9 / (info["tensor_bytes"] + 1024)) < 1e-6, "roofline")
    check(roof["bytes_per_token"]["gufo"] == info["tensor_bytes"] + 2048, "gufo bytes per token, float32 K/V")
    check(abs(roof["fraction"]["gufo"] - 250.0 / (100e9 / (info["tensor_bytes"] + 2048))) < 1e-9, "gufo fraction")
    # --cpu: issue 23's targets, and the roofline divides by the read bandwidth when it is given.
    report["mode"] = "cpu"
    report["bandwidth"] = {"copy_gbs": 40.0, "read_gbs": 20.0, "roofline_gbs": 20.0, "how": "test"}
    summarize(report)
    md = render_markdown(report)
    check("| tg128@d0 | 100.0 | 250.0 | 2.50× | ≥ 1.0× | yes |" in md, "CPU decode target")
    check("≥ 80% |" in md and "the roofline divides by 20.0 GB/s" in md, "CPU roofline target and denominator")
    roof = report["results"]["q4_k_m"]["roofline"][0]
    check(abs(roof["roofline_tok_s"]["gufo"] - 20e9 / (info["tensor_bytes"] + 2048)) < 1e-6, "CPU roofline")
    if failures:
        print("self-test: %d failures" % len(failures), file=sys.stderr)
        return 1
    print("self-test: parsing and arithmetic checks passed", file=sys.stderr)
    if not args.llama_cpp:
        print("SKIP: no --llama-cpp given: the end-to-end CPU comparison did not run", file=sys.stderr)
        return 77
    # A short end-to-end run on the CPU: both engines must give numbers for every test.
    e2e = argparse.Namespace(**{**vars(args), "types": TYPES, "parts": ["bench", "serve", "batched", "roofline"],
                                "prefill": [64], "depths": [0, 64], "decode": 8, "reps": 1, "reps_long": 1,
                                "streams": [1, 2], "serve_prompt": 32, "serve_max_tokens": 8, "gufo_cpu": True,
                                "bandwidth_gbs": 10.0, "resume": None})
    sys.argv = sys.argv[:1] + ["(self-test end-to-end)"]
    compare(e2e)
    with open(os.path.join(args.out, "results.json")) as f:
        report = json.load(f)
    for t in TYPES:
        tests = report["results"][t].get("tests", {})
        for name in ("pp64@d0", "tg8@d0", "tg8@d64", "streams1", "streams2"):
            for engine in ("llama.cpp", "gufo"):
                e = tests.get(name, {}).get(engine, {})
                check(isinstance(e.get("tok_s"), (int, float)) and e["tok_s"] > 0,
                      "%s %s %s: %s" % (t, name, engine, e.get("error", "no number")))
        check(report["results"][t].get("batched", {}).get("rows"), "%s llama-batched-bench rows" % t)
    check(os.path.getsize(os.path.join(args.out, "results.md")) > 500, "results.md written")
    if failures:
        print("self-test: %d failures" % len(failures), file=sys.stderr)
        return 1
    print("self-test: end-to-end CPU comparison passed (%s)" % os.path.join(args.out, "results.md"), file=sys.stderr)
    return 0


def int_list(text):
    return [int(x) for x in text.split(",") if x.strip()]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llama-cpp", help="a llama.cpp build's bin directory (llama-bench, llama-server)")
    p.add_argument("--gufo", help="the gufo binary")
    p.add_argument("--models", required=True, help="directory of qwen3-SHAPE-TYPE.gguf files")
    p.add_argument("--out", default="bench-results", help="where results.json/.md and logs.txt go")
    p.add_argument("--shape", default="8b", help="model shape in the file names (default 8b)")
    p.add_argument("--types", type=lambda s: s.split(","), default=TYPES, help="in priority order")
    p.add_argument("--parts", type=lambda s: s.split(","), default=["bench", "serve", "batched", "roofline"],
                   help="bench, serve, batched (llama-batched-bench reference), roofline")
    p.add_argument("--prefill", type=int_list, default=[512, 4096, 32768, 131072])
    p.add_argument("--decode", type=int, default=128)
    p.add_argument("--depths", type=int_list, default=[0, 4096, 32768])
    p.add_argument("--reps", type=int, default=3, help="repetitions of tests up to 4k tokens")
    p.add_argument("--reps-long", type=int, default=1, help="repetitions of 32k/128k prefills")
    p.add_argument("--streams", type=int_list, default=[1, 8, 32])
    p.add_argument("--serve-prompt", type=int, default=512, help="prompt tokens per stream (about)")
    p.add_argument("--serve-max-tokens", type=int, default=128)
    p.add_argument("--serve-warmup", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--threads", type=int, default=0, help="CPU threads for both engines (0: their default)")
    p.add_argument("--ngl", type=int, default=99, help="llama.cpp layers on the GPU")
    p.add_argument("--kv-bytes", type=int, default=2,
                   help="bytes per cached key/value element in llama.cpp (its default F16 cache: 2)")
    p.add_argument("--gufo-kv-bytes", type=int, default=4,
                   help="bytes per cached key/value element in gufo (qwen-gpu keeps float32 K/V: 4)")
    p.add_argument("--timeout-s", type=float, default=240, help="most seconds for one command")
    p.add_argument("--budget-s", type=float, default=480, help="most seconds for the whole comparison")
    p.add_argument("--min-run-s", type=float, default=15, help="do not start a run with less budget left")
    p.add_argument("--bandwidth-gbs", type=float, help="use this bandwidth instead of measuring it")
    p.add_argument("--gufo-cpu", action="store_true", help="run gufo even when it has only its CPU provider")
    p.add_argument("--cpu", action="store_true",
                   help="the CPU comparison (issue 23): gufo on qwen-cpu, llama.cpp with -ngl 0, the CPU's read "
                        "bandwidth (membw_cpu.c) as the roofline, CPU targets (>= 1.0x, 80%% of the roofline), "
                        "F32 K/V for gufo; defaults --types q4_k_m,q8_0 --parts bench,roofline --prefill 512 "
                        "--depths 0 unless given")
    p.add_argument("--resume", help="an earlier results.json: keep its numbers, run what is missing or failed "
                   "(a timeout counts as a result unless --retry-timeouts)")
    p.add_argument("--retry-timeouts", action="store_true", help="with --resume: run timed-out cells again")
    p.add_argument("--self-test", action="store_true", help="check this script on a tiny model (see above)")
    p.add_argument("--qwen-random-model", help="the qwen_random_model tool (for --self-test)")
    p.add_argument("--vocab", help="qwen3-vocab.gguf (for --self-test)")
    given = {a.split("=")[0] for a in sys.argv[1:] if a.startswith("--")}
    args = p.parse_args()
    if args.llama_cpp == "":
        args.llama_cpp = None
    if args.cpu:
        args.gufo_cpu = True
        # On a machine with a GPU, gufo would pick qwen-gpu: hide the devices from
        # both engines' CUDA runtimes (a CPU build of llama.cpp has none anyway).
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        args.ngl = 0 if "--ngl" not in given else args.ngl
        for flag, value in (("--types", ["q4_k_m", "q8_0"]), ("--parts", ["bench", "roofline"]),
                            ("--prefill", [512]), ("--depths", [0])):
            if flag not in given:
                setattr(args, flag[2:].replace("-", "_"), value)
    for t in args.types:
        if t not in TYPES:
            p.error("--types: %s is not one of %s" % (t, ",".join(TYPES)))
    if args.self_test:
        return self_test(args)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())

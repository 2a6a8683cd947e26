#!/usr/bin/env python3
"""Independent check of the Qwen3 golden files: a pure-Python (float64, standard library
only) Qwen3 forward pass that reads the weights from the GGUF exactly as llama.cpp lays
them out and compares its results with the references transformers recorded in the JSON.

    python3 tools/qwen/check_golden.py tests/golden/qwen/*.json

For every model it checks
  - the full logits of each fixed sequence (computed token by token through a KV cache,
    so the cache path is what is compared) against the reference: max |diff|;
  - the hidden state after the final norm;
  - the greedy generations (exact token equality);
  - the tokenizer reference ids of the ASCII strings against make_golden.py's own encoder.
Exit status 1 when a logit differs by more than --tol (default 1e-4 * max |logit|) or a
token differs. It proves the GGUF layout (names, ggml dim order, no Q/K permutation,
NEOX RoPE, per-head Q/K RMSNorm, tied output) matches what transformers computed.
"""

import argparse
import json
import math
import os
import struct
import sys
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden as mg  # noqa: E402


def to_floats(gtype, data):
    if gtype == mg.GGML_F32:
        a = array("f")
        a.frombytes(data)
    elif gtype == mg.GGML_F16:
        a = array("f", struct.unpack("<%de" % (len(data) // 2), data))
    elif gtype == mg.GGML_BF16:
        h = array("H")
        h.frombytes(data)
        a = array("f")
        a.frombytes(array("I", (v << 16 for v in h)).tobytes())
    else:
        raise ValueError("type %d" % gtype)
    if sys.byteorder != "little":
        raise SystemExit("big-endian host")
    return list(a)


class Model:
    def __init__(self, path):
        kv, tensors = mg.read_gguf(path)
        assert kv["general.architecture"] == "qwen3"
        self.n_layer = kv["qwen3.block_count"]
        self.n_embd = kv["qwen3.embedding_length"]
        self.n_head = kv["qwen3.attention.head_count"]
        self.n_kv = kv["qwen3.attention.head_count_kv"]
        self.hd = kv["qwen3.attention.key_length"]
        self.base = kv["qwen3.rope.freq_base"]
        self.eps = kv["qwen3.attention.layer_norm_rms_epsilon"]
        self.n_vocab = len(kv["tokenizer.ggml.tokens"])
        self.t = {}
        for name, (gtype, dims, data) in tensors.items():
            vals = to_floats(gtype, data)
            if len(dims) == 2:  # ggml dims [in, out]: `out` rows of `in` values each
                n_in, n_out = dims
                self.t[name] = [vals[r * n_in:(r + 1) * n_in] for r in range(n_out)]
            else:
                self.t[name] = vals
        self.out = self.t.get("output.weight", self.t["token_embd.weight"])
        assert len(self.t["token_embd.weight"]) == self.n_vocab

    @staticmethod
    def matvec(rows, x):
        return [sum(map(float.__mul__, r, x)) for r in rows]

    def rms(self, x, w):
        s = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + self.eps)
        return [v * s * g for v, g in zip(x, w)]

    def rope(self, x, pos):
        half = self.hd // 2
        out = list(x)
        for i in range(half):
            ang = pos * self.base ** (-2.0 * i / self.hd)
            c, s = math.cos(ang), math.sin(ang)
            a, b = x[i], x[i + half]
            out[i] = a * c - b * s
            out[i + half] = b * c + a * s
        return out

    def new_cache(self):
        return [([], []) for _ in range(self.n_layer)]

    def step(self, token, pos, cache):
        """One token through every layer; returns (logits, final-norm hidden)."""
        x = [float(v) for v in self.t["token_embd.weight"][token]]
        hd, group = self.hd, self.n_head // self.n_kv
        for il in range(self.n_layer):
            b = "blk.%d." % il
            h = self.rms(x, self.t[b + "attn_norm.weight"])
            q = self.matvec(self.t[b + "attn_q.weight"], h)
            k = self.matvec(self.t[b + "attn_k.weight"], h)
            v = self.matvec(self.t[b + "attn_v.weight"], h)
            qn, kn = self.t[b + "attn_q_norm.weight"], self.t[b + "attn_k_norm.weight"]
            q = [self.rope(self.rms(q[i * hd:(i + 1) * hd], qn), pos) for i in range(self.n_head)]
            k = [self.rope(self.rms(k[i * hd:(i + 1) * hd], kn), pos) for i in range(self.n_kv)]
            v = [v[i * hd:(i + 1) * hd] for i in range(self.n_kv)]
            ks, vs = cache[il]
            ks.append(k)
            vs.append(v)
            att = []
            for ih in range(self.n_head):
                j = ih // group
                sc = [sum(map(float.__mul__, q[ih], kk[j])) / math.sqrt(hd) for kk in ks]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                z = sum(e)
                o = [0.0] * hd
                for p, vv in zip(e, vs):
                    w = p / z
                    vj = vv[j]
                    for d in range(hd):
                        o[d] += w * vj[d]
                att.extend(o)
            x = [a + c for a, c in zip(x, self.matvec(self.t[b + "attn_output.weight"], att))]
            h = self.rms(x, self.t[b + "ffn_norm.weight"])
            g = self.matvec(self.t[b + "ffn_gate.weight"], h)
            u = self.matvec(self.t[b + "ffn_up.weight"], h)
            a = [gg / (1.0 + math.exp(-gg)) * uu for gg, uu in zip(g, u)]
            x = [a_ + c for a_, c in zip(x, self.matvec(self.t[b + "ffn_down.weight"], a))]
        hn = self.rms(x, self.t["output_norm.weight"])
        return self.matvec(self.out, hn), hn


def argmax(v):
    return max(range(len(v)), key=v.__getitem__)


def check(json_path, tol_rel, do_gen):
    with open(json_path) as f:
        ref = json.load(f)
    model = Model(os.path.join(os.path.dirname(json_path), ref["gguf"]))
    scale = ref["logit_abs_max"]
    tol = tol_rel * scale
    ok = True
    worst = 0.0
    hidden = None
    for si, entry in enumerate(ref["forward"]):
        cache = model.new_cache()
        d = 0.0
        top_ok = True
        for pos, tok in enumerate(entry["ids"]):
            logits, hn = model.step(tok, pos, cache)
            rl = entry["logits"][pos]
            d = max(d, max(abs(a - b) for a, b in zip(logits, rl)))
            top_ok &= argmax(logits) == entry["top1"][pos]
            if si == ref["final_norm_hidden"]["sequence_index"]:
                rh = ref["final_norm_hidden"]["values"][pos]
                hidden = max(hidden or 0.0, max(abs(a - b) for a, b in zip(hn, rh)))
        worst = max(worst, d)
        print("  %s forward[%d] len %2d: max|dlogit| %.3g (tol %.3g) top1 %s"
              % (ref["name"], si, len(entry["ids"]), d, tol, "same" if top_ok else "DIFFERENT"))
        ok &= d <= tol and top_ok
    print("  %s final-norm hidden: max|d| %.3g" % (ref["name"], hidden))
    ok &= hidden <= tol_rel * 10
    if do_gen:
        for g in ref["generation"]:
            cache = model.new_cache()
            seq = list(g["prompt_ids"])
            for pos, tok in enumerate(seq):
                logits, _ = model.step(tok, pos, cache)
            out = []
            for _ in range(len(g["generated_ids"])):
                nxt = argmax(logits)
                out.append(nxt)
                logits, _ = model.step(nxt, len(seq), cache)
                seq.append(nxt)
            same = out == g["generated_ids"]
            print("  %s greedy %r: %s (min margin %.3g)"
                  % (ref["name"], g["prompt_text"][:24], "same" if same else "DIFFERENT %s" % out, g["min_margin"]))
            ok &= same
    vocab = mg.build_vocab()
    for e in ref.get("tokenizer_reference") or []:
        if e["text"].isascii() and mg.simple_encode(vocab, e["text"]) != e["ids"]:
            print("  tokenizer mismatch on %r" % e["text"])
            ok = False
    print("%s: %s (max |dlogit| %.3g, logit scale %.3g)" % (json_path, "OK" if ok else "FAIL", worst, scale))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--tol", type=float, default=1e-4, help="max |logit diff| relative to max |logit|")
    ap.add_argument("--no-generation", action="store_true")
    args = ap.parse_args()
    ok = all([check(p, args.tol, not args.no_generation) for p in args.json])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

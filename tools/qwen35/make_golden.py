#!/usr/bin/env python3
"""Reference outputs for the tiny qwen35 (Qwen3.5/3.8) GGUF files, from transformers' qwen3_5.

The tiny model is written by the C tool qwen_qwen35_random_model in llama.cpp's qwen35
layout. This script reads such a file, undoes what llama.cpp's converter
(convert_hf_to_gguf.py, Qwen3_5TextModel) does to the transformers checkpoint, and so
gets back the Qwen3_5ForCausalLM state dict and config:

  - names: token_embd -> model.embed_tokens, blk.N.attn_qkv -> model.layers.N.linear_attn.in_proj_qkv,
    attn_gate -> in_proj_z, ssm_beta/ssm_alpha -> in_proj_b/in_proj_a, ssm_dt.bias -> dt_bias,
    ssm_a -> A_log, ssm_conv1d -> conv1d, ssm_norm -> norm, ssm_out -> out_proj, attn_q/k/v/output
    -> self_attn.q/k/v/o_proj, post_attention_norm -> post_attention_layernorm, ... (GGUF_TO_HF);
    the MTP block blk.<n_layer>.* -> mtp.layers.0.*, nextn.eh_proj -> mtp.fc,
    nextn.enorm/hnorm -> mtp.pre_fc_norm_embedding/hidden, nextn.shared_head_norm -> mtp.norm;
  - values: every RMSNorm weight but linear_attn.norm was stored as 1 + w (w = stored - 1);
    ssm_a = -exp(A_log) (A_log = log(-ssm_a)); conv1d [C, K] -> [C, 1, K]; and the value
    heads of a Gated DeltaNet block, stored tiled over the key heads (GGUF head r*Hk + k is
    transformers' head k*(Hv/Hk) + r), are put back in transformers' grouped order in
    in_proj_qkv's V rows, in_proj_z's rows, in_proj_a/b's rows, A_log, dt_bias, conv1d's V
    channels and out_proj's columns.

Then (on the GPU machine, torch + transformers 5.17):

    python3 tools/qwen35/make_golden.py --gguf tiny-f32.gguf --out tests/golden/qwen35/tiny-f32.json

loads the state dict into Qwen3_5ForCausalLM (float32, eager attention, TF32 off) and
records the logits of every position of fixed token sequences (one forward pass: the
chunked delta rule), the same through token-by-token decoding with the cache (the
recurrent rule), and the MTP block's logits computed as llama.cpp's graph_mtp does
(transformers loads no MTP weights: _keys_to_ignore_on_load_unexpected = ["^mtp.*"]),
written with transformers' own Qwen3_5RMSNorm / Qwen3_5Attention / Qwen3_5MLP modules.

Without torch:

    python3 tools/qwen35/make_golden.py --selftest GGUF

checks the mapping offline: every GGUF tensor maps to exactly one transformers name with
the shape transformers gives it, and applying the converter's transforms to the mapped
tensors gives back the file's values (the V-head orders bit for bit, norms within float32
rounding of +-1, ssm_a within exp/log rounding); and

    python3 tools/qwen35/make_golden.py --python-reference GGUF OUT.json

runs a float64 pure-Python transcription of transformers' Qwen3_5 forward (recurrent
delta rule, grouped heads, (1 + w) norms) and of llama.cpp's MTP graph on the mapped
weights and writes the same JSON as the torch run, so the C code can be checked here
against the transformers conventions before the GPU run replaces it.
"""

import argparse
import hashlib
import json
import math
import os
import platform
import struct
import sys

# ---------------------------------------------------------------------------
# GGUF reader (v2/v3, little-endian; only what the tiny files use)
# ---------------------------------------------------------------------------
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
_SCALAR = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f",
           T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == T_STR:
            return self.string()
        if vtype == T_ARR:
            etype, count = self.take("<I"), self.take("<Q")
            return [self.value(etype) for _ in range(count)]
        return self.take(_SCALAR[vtype])


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    r.pos = 4
    version = r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        kv[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        dims = [r.take("<Q") for _ in range(n_dims)]
        ttype, offset = r.take("<I"), r.take("<Q")
        infos.append((name, dims, ttype, offset))
    align = kv.get("general.alignment", 32)
    base = (r.pos + align - 1) // align * align
    tensors = {}
    for name, dims, ttype, offset in infos:
        n = 1
        for d in dims:
            n *= d
        start = base + offset
        if ttype == GGML_F32:
            values = list(struct.unpack_from(f"<{n}f", data, start))
        elif ttype == GGML_F16:
            values = list(struct.unpack_from(f"<{n}e", data, start))
        elif ttype == GGML_BF16:
            raw = struct.unpack_from(f"<{n}H", data, start)
            values = list(struct.unpack(f"<{n}f", struct.pack(f"<{n}I", *[v << 16 for v in raw])))
        elif ttype == GGML_Q8_0:  # blocks of 32: an f16 scale, 32 int8 quants
            values = []
            for b in range(n // 32):
                off = start + 34 * b
                d = struct.unpack_from("<e", data, off)[0]
                values += [d * q for q in struct.unpack_from("<32b", data, off + 2)]
        else:
            raise SystemExit(f"{path}: tensor {name} has ggml type {ttype}; the references read F32/F16/BF16/Q8_0")
        tensors[name] = (dims, values)
    return version, kv, tensors, hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------
# Config and the inverse of the converter
# ---------------------------------------------------------------------------
A = "qwen35."


def hf_config(kv, tensors):
    n_all = kv[A + "block_count"]
    n_nextn = kv.get(A + "nextn_predict_layers", 0)
    n_layer = n_all - n_nextn
    interval = kv.get(A + "full_attention_interval", 4)
    head_dim = kv.get(A + "attention.key_length", kv[A + "embedding_length"] // kv[A + "attention.head_count"])
    sections = kv[A + "rope.dimension_sections"]
    return {
        "vocab_size": tensors["token_embd.weight"][0][1],
        "hidden_size": kv[A + "embedding_length"],
        "intermediate_size": kv[A + "feed_forward_length"],
        "num_hidden_layers": n_layer,
        "num_attention_heads": kv[A + "attention.head_count"],
        "num_key_value_heads": kv[A + "attention.head_count_kv"],
        "head_dim": head_dim,
        "rms_norm_eps": kv[A + "attention.layer_norm_rms_epsilon"],
        "max_position_embeddings": kv[A + "context_length"],
        "tie_word_embeddings": "output.weight" not in tensors,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": kv.get(A + "rope.freq_base", 10000.0),
            "partial_rotary_factor": kv.get(A + "rope.dimension_count", head_dim) / head_dim,
            "mrope_section": list(sections[:3]),
            "mrope_interleaved": True,
        },
        "linear_conv_kernel_dim": kv[A + "ssm.conv_kernel"],
        "linear_key_head_dim": kv[A + "ssm.state_size"],
        "linear_value_head_dim": kv[A + "ssm.inner_size"] // kv[A + "ssm.time_step_rank"],
        "linear_num_key_heads": kv[A + "ssm.group_count"],
        "linear_num_value_heads": kv[A + "ssm.time_step_rank"],
        "layer_types": ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n_layer)],
        "mtp_num_hidden_layers": n_nextn,
        "hidden_act": "silu",
        "attention_bias": False,
    }


# GGUF suffix -> (transformers suffix, kind); kinds: "m" matrix, "n" (1 + w) norm, "v" vector as is
GGUF_TO_HF = {
    "attn_norm.weight": ("input_layernorm.weight", "n"),
    "post_attention_norm.weight": ("post_attention_layernorm.weight", "n"),
    "ffn_gate.weight": ("mlp.gate_proj.weight", "m"),
    "ffn_up.weight": ("mlp.up_proj.weight", "m"),
    "ffn_down.weight": ("mlp.down_proj.weight", "m"),
    "attn_q.weight": ("self_attn.q_proj.weight", "m"),
    "attn_k.weight": ("self_attn.k_proj.weight", "m"),
    "attn_v.weight": ("self_attn.v_proj.weight", "m"),
    "attn_output.weight": ("self_attn.o_proj.weight", "m"),
    "attn_q_norm.weight": ("self_attn.q_norm.weight", "n"),
    "attn_k_norm.weight": ("self_attn.k_norm.weight", "n"),
    "attn_qkv.weight": ("linear_attn.in_proj_qkv.weight", "m"),
    "attn_gate.weight": ("linear_attn.in_proj_z.weight", "m"),
    "ssm_beta.weight": ("linear_attn.in_proj_b.weight", "m"),
    "ssm_alpha.weight": ("linear_attn.in_proj_a.weight", "m"),
    "ssm_out.weight": ("linear_attn.out_proj.weight", "m"),
    "ssm_conv1d.weight": ("linear_attn.conv1d.weight", "conv"),
    "ssm_dt.bias": ("linear_attn.dt_bias", "v"),
    "ssm_a": ("linear_attn.A_log", "a"),
    "ssm_norm.weight": ("linear_attn.norm.weight", "v"),
}
NEXTN_TO_HF = {
    "nextn.eh_proj.weight": ("mtp.fc.weight", "m"),
    "nextn.enorm.weight": ("mtp.pre_fc_norm_embedding.weight", "n"),
    "nextn.hnorm.weight": ("mtp.pre_fc_norm_hidden.weight", "n"),
    "nextn.shared_head_norm.weight": ("mtp.norm.weight", "n"),
}


def tiled_to_grouped(n_k, per_k):
    """perm[grouped head] = tiled head: transformers head k*per_k + r is GGUF head r*n_k + k."""
    return [(h % per_k) * n_k + h // per_k for h in range(n_k * per_k)]


def permute_rows(values, cols, row_perm_blocks, block_rows, first_row=0):
    """Rows [first_row + b*block_rows, ...) of a row-major matrix reordered by blocks: new block b = old perm[b]."""
    out = list(values)
    for b, src in enumerate(row_perm_blocks):
        d0 = (first_row + b * block_rows) * cols
        s0 = (first_row + src * block_rows) * cols
        out[d0:d0 + block_rows * cols] = values[s0:s0 + block_rows * cols]
    return out


def permute_cols(values, rows, cols, perm_blocks, block_cols):
    out = list(values)
    for r in range(rows):
        base = r * cols
        for b, src in enumerate(perm_blocks):
            out[base + b * block_cols:base + (b + 1) * block_cols] = \
                values[base + src * block_cols:base + (src + 1) * block_cols]
    return out


def invert(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def gdn_reorder(suffix, dims, values, cfg, perm):
    """Applies the head permutation `perm` (grouped<-tiled, or its inverse) to one GDN tensor."""
    hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    if hk == hv:
        return values
    if suffix == "attn_qkv.weight":
        return permute_rows(values, dims[0], perm, dv, first_row=2 * hk * dk)
    if suffix == "attn_gate.weight":
        return permute_rows(values, dims[0], perm, dv)
    if suffix in ("ssm_beta.weight", "ssm_alpha.weight"):
        return permute_rows(values, dims[0], perm, 1)
    if suffix in ("ssm_dt.bias", "ssm_a"):
        return [values[p] for p in perm]
    if suffix == "ssm_conv1d.weight":
        return permute_rows(values, dims[0], perm, dv, first_row=2 * hk * dk)
    if suffix == "ssm_out.weight":
        return permute_cols(values, dims[1], dims[0], perm, dv)
    return values


def hf_shape(dims, kind, cfg):
    if kind == "conv":
        return [dims[1], 1, dims[0]]
    return list(reversed(dims))


def gguf_to_hf(kv, tensors, cfg):
    """{transformers name: (shape, values)}; raises on any tensor it cannot place."""
    n_layer = cfg["num_hidden_layers"]
    grouped = tiled_to_grouped(cfg["linear_num_key_heads"],
                               cfg["linear_num_value_heads"] // cfg["linear_num_key_heads"])
    out = {}
    for name, (dims, values) in tensors.items():
        if name == "token_embd.weight":
            out["model.embed_tokens.weight"] = (hf_shape(dims, "m", cfg), values)
            continue
        if name == "output.weight":
            out["lm_head.weight"] = (hf_shape(dims, "m", cfg), values)
            continue
        if name == "output_norm.weight":
            out["model.norm.weight"] = (hf_shape(dims, "n", cfg), [v - 1.0 for v in values])
            continue
        parts = name.split(".", 2)
        if parts[0] != "blk" or len(parts) != 3:
            raise SystemExit(f"no transformers name for tensor {name}")
        il, suffix = int(parts[1]), parts[2]
        if il >= n_layer:
            table, prefix = ({**GGUF_TO_HF, **NEXTN_TO_HF}, f"mtp.layers.{il - n_layer}.")
        else:
            table, prefix = (GGUF_TO_HF, f"model.layers.{il}.")
        if suffix not in table:
            raise SystemExit(f"no transformers name for tensor {name}")
        hf_suffix, kind = table[suffix]
        if hf_suffix.startswith("mtp."):
            prefix = ""
        vals = gdn_reorder(suffix, dims, values, cfg, grouped) if il < n_layer else values
        if kind == "n":
            vals = [v - 1.0 for v in vals]
        elif kind == "a":
            vals = [math.log(-v) for v in vals]
        out[prefix + hf_suffix] = (hf_shape(dims, kind, cfg), vals)
    return out


def hf_to_gguf(hf, cfg):
    """The converter's transforms (for the self-test): {GGUF name: values}."""
    n_layer = cfg["num_hidden_layers"]
    tiled = invert(tiled_to_grouped(cfg["linear_num_key_heads"],
                                    cfg["linear_num_value_heads"] // cfg["linear_num_key_heads"]))
    back = {}
    rev = {v[0]: (k, v[1]) for k, v in GGUF_TO_HF.items()}
    rev_mtp = {v[0]: (k, v[1]) for k, v in NEXTN_TO_HF.items()}
    for name, (shape, values) in hf.items():
        if name == "model.embed_tokens.weight":
            back["token_embd.weight"] = values
            continue
        if name == "lm_head.weight":
            back["output.weight"] = values
            continue
        if name == "model.norm.weight":
            back["output_norm.weight"] = [v + 1.0 for v in values]
            continue
        if name in rev_mtp:
            suffix, kind = rev_mtp[name]
            il = n_layer
        elif name.startswith("mtp.layers."):
            rest = name.split(".", 3)
            il, (suffix, kind) = n_layer + int(rest[2]), rev[rest[3]]
        else:
            rest = name.split(".", 3)
            il, (suffix, kind) = int(rest[2]), rev[rest[3]]
        vals = values
        if kind == "n":
            vals = [v + 1.0 for v in vals]
        elif kind == "a":
            vals = [-math.exp(v) for v in vals]
        if il < n_layer:
            gguf_dims = list(reversed(shape)) if kind != "conv" else [shape[2], shape[0]]
            vals = gdn_reorder(suffix, gguf_dims, vals, cfg, tiled)
        back[f"blk.{il}.{suffix}"] = vals
    return back


# ---------------------------------------------------------------------------
# Token sequences (fixed) and the JSON record
# ---------------------------------------------------------------------------
def sequences(vocab):
    import random
    rnd = random.Random(20260502)
    return [[rnd.randrange(vocab) for _ in range(n)] for n in (70, 9)]


def fl(x):
    return float(f"{x:.7g}")


# Full logit rows are kept at these positions only (every position's argmax is kept):
# the start, around the first chunk boundary of 64 (positions 63, 64, 65) and the end.
KEEP = (0, 1, 2, 31, 62, 63, 64, 65, 68, 69)


def record_rows(entry, key, rows):
    """entry[key + "_positions"], entry[key] (kept rows), entry[key + "_argmax"] (every row)."""
    kept = [p for p in range(len(rows)) if p in KEEP or len(rows) <= 16]
    entry[key + "_positions"] = kept
    entry[key] = [[fl(v) for v in rows[p]] for p in kept]
    entry[key + "_argmax"] = [max(range(len(r)), key=lambda i: r[i]) for r in rows]


# ---------------------------------------------------------------------------
# Float64 pure-Python transcription of transformers' Qwen3_5 (and llama.cpp's MTP graph)
# ---------------------------------------------------------------------------
class PyModel:
    def __init__(self, cfg, hf):
        self.cfg, self.w = cfg, {k: v[1] for k, v in hf.items()}
        self.shape = {k: v[0] for k, v in hf.items()}

    def mat(self, name, x):
        w, (rows, cols) = self.w[name], self.shape[name][:2]
        return [sum(w[r * cols + c] * x[c] for c in range(cols)) for r in range(rows)]

    def rms(self, x, name, plus_one=True):
        eps = self.cfg["rms_norm_eps"]
        s = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
        w = self.w[name]
        return [x[i] * s * ((1.0 + w[i]) if plus_one else w[i]) for i in range(len(x))]

    @staticmethod
    def silu(x):
        return x / (1.0 + math.exp(-x))

    def mlp(self, p, x):
        g, u = self.mat(p + "mlp.gate_proj.weight", x), self.mat(p + "mlp.up_proj.weight", x)
        return self.mat(p + "mlp.down_proj.weight", [self.silu(a) * b for a, b in zip(g, u)])

    def rope_inv(self):
        rp, hd = self.cfg["rope_parameters"], self.cfg["head_dim"]
        dim = int(hd * rp["partial_rotary_factor"])
        return [1.0 / (rp["rope_theta"] ** (i / dim)) for i in range(0, dim, 2)]

    def attention(self, p, x, pos, cache):
        cfg = self.cfg
        H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        qf = self.mat(p + "self_attn.q_proj.weight", x)
        k = self.mat(p + "self_attn.k_proj.weight", x)
        v = self.mat(p + "self_attn.v_proj.weight", x)
        inv = self.rope_inv()
        half = len(inv)

        def rot(vec):
            out = list(vec)
            for i in range(half):
                a = pos * inv[i]
                out[i] = vec[i] * math.cos(a) - vec[i + half] * math.sin(a)
                out[i + half] = vec[i + half] * math.cos(a) + vec[i] * math.sin(a)
            return out
        keys = [rot(self.rms(k[h * hd:(h + 1) * hd], p + "self_attn.k_norm.weight")) for h in range(Hkv)]
        cache.append((keys, [v[h * hd:(h + 1) * hd] for h in range(Hkv)]))
        out = []
        for h in range(H):
            q = rot(self.rms(qf[h * 2 * hd:h * 2 * hd + hd], p + "self_attn.q_norm.weight"))
            gate = qf[h * 2 * hd + hd:(h + 1) * 2 * hd]
            kvh = h // (H // Hkv)
            scores = [sum(q[i] * ks[kvh][i] for i in range(hd)) / math.sqrt(hd) for ks, _ in cache]
            m = max(scores)
            e = [math.exp(s - m) for s in scores]
            tot = sum(e)
            for i in range(hd):
                acc = sum(e[j] / tot * cache[j][1][kvh][i] for j in range(len(cache)))
                out.append(acc / (1.0 + math.exp(-gate[i])))
        return self.mat(p + "self_attn.o_proj.weight", out)

    def gdn(self, p, x, state):
        cfg = self.cfg
        hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
        dk, dv, K = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["linear_conv_kernel_dim"]
        mixed = self.mat(p + "linear_attn.in_proj_qkv.weight", x)
        z = self.mat(p + "linear_attn.in_proj_z.weight", x)
        b = self.mat(p + "linear_attn.in_proj_b.weight", x)
        a = self.mat(p + "linear_attn.in_proj_a.weight", x)
        conv_w = self.w[p + "linear_attn.conv1d.weight"]
        hist = state.setdefault("conv", [[0.0] * len(mixed) for _ in range(K - 1)])
        window = hist + [mixed]
        conv = [self.silu(sum(conv_w[c * K + j] * window[j][c] for j in range(K))) for c in range(len(mixed))]
        state["conv"] = window[1:]
        S = state.setdefault("S", [[[0.0] * dv for _ in range(dk)] for _ in range(hv)])
        A_log, dt = self.w[p + "linear_attn.A_log"], self.w[p + "linear_attn.dt_bias"]
        o_all = []
        for h in range(hv):
            kh = h // (hv // hk)  # transformers' grouped value heads
            q = conv[kh * dk:(kh + 1) * dk]
            k = conv[hk * dk + kh * dk:hk * dk + (kh + 1) * dk]
            v = conv[2 * hk * dk + h * dv:2 * hk * dk + (h + 1) * dv]
            qn = 1.0 / math.sqrt(sum(t * t for t in q) + 1e-6) / math.sqrt(dk)
            kn = 1.0 / math.sqrt(sum(t * t for t in k) + 1e-6)
            q, k = [t * qn for t in q], [t * kn for t in k]
            u = a[h] + dt[h]
            g = -math.exp(A_log[h]) * (u if u > 20 else math.log1p(math.exp(u)))
            beta = 1.0 / (1.0 + math.exp(-b[h]))
            Sh, decay = S[h], math.exp(g)
            for i in range(dk):
                for j in range(dv):
                    Sh[i][j] *= decay
            d = [beta * (v[j] - sum(Sh[i][j] * k[i] for i in range(dk))) for j in range(dv)]
            for i in range(dk):
                for j in range(dv):
                    Sh[i][j] += k[i] * d[j]
            o = [sum(Sh[i][j] * q[i] for i in range(dk)) for j in range(dv)]
            # Qwen3_5RMSNormGated: plain weight, then silu(z)
            o = self.rms(o, p + "linear_attn.norm.weight", plus_one=False)
            o_all += [o[j] * self.silu(z[h * dv + j]) for j in range(dv)]
        return self.mat(p + "linear_attn.out_proj.weight", o_all)

    def embed(self, tok):
        D = self.cfg["hidden_size"]
        return self.w["model.embed_tokens.weight"][tok * D:(tok + 1) * D]

    def head(self, x):
        name = "model.embed_tokens.weight" if self.cfg["tie_word_embeddings"] else "lm_head.weight"
        w, D = self.w[name], self.cfg["hidden_size"]
        return [sum(w[r * D + c] * x[c] for c in range(D)) for r in range(self.cfg["vocab_size"])]

    def run(self, tokens):
        """Logits and the normed final hidden state of every position."""
        cfg = self.cfg
        states = [{} for _ in range(cfg["num_hidden_layers"])]
        caches = [[] for _ in range(cfg["num_hidden_layers"])]
        logits, hidden = [], []
        for pos, tok in enumerate(tokens):
            x = list(self.embed(tok))
            for il, kind in enumerate(cfg["layer_types"]):
                p = f"model.layers.{il}."
                n = self.rms(x, p + "input_layernorm.weight")
                mix = self.gdn(p, n, states[il]) if kind == "linear_attention" else self.attention(p, n, pos, caches[il])
                x = [a + b for a, b in zip(x, mix)]
                x = [a + b for a, b in zip(x, self.mlp(p, self.rms(x, p + "post_attention_layernorm.weight")))]
            h = self.rms(x, "model.norm.weight")
            hidden.append(h)
            logits.append(self.head(h))
        return logits, hidden

    def mtp(self, tokens, hidden):
        """llama.cpp's graph_mtp: row r = (trunk hidden r, token r+1) at MTP position r."""
        cache, out = [], []
        p = "mtp.layers.0."
        for r in range(len(tokens) - 1):
            e = self.rms(list(self.embed(tokens[r + 1])), "mtp.pre_fc_norm_embedding.weight")
            hn = self.rms(hidden[r], "mtp.pre_fc_norm_hidden.weight")
            x = self.mat("mtp.fc.weight", e + hn)
            x = [a + b for a, b in zip(x, self.attention(p, self.rms(x, p + "input_layernorm.weight"), r, cache))]
            x = [a + b for a, b in zip(x, self.mlp(p, self.rms(x, p + "post_attention_layernorm.weight")))]
            out.append(self.head(self.rms(x, "mtp.norm.weight")))
        return out


# ---------------------------------------------------------------------------
# Modes
# ---------------------------------------------------------------------------
def selftest(path):
    version, kv, tensors, sha = read_gguf(path)
    cfg = hf_config(kv, tensors)
    hf = gguf_to_hf(kv, tensors, cfg)
    problems = []
    if len(hf) != len(tensors):
        problems.append(f"{len(tensors)} tensors map to {len(hf)} names")
    D, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv, K = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["linear_conv_kernel_dim"]
    H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    conv = 2 * hk * dk + hv * dv
    expect = {"model.embed_tokens.weight": [V, D], "model.norm.weight": [D]}
    if not cfg["tie_word_embeddings"]:
        expect["lm_head.weight"] = [V, D]
    mtp_only = cfg["mtp_num_hidden_layers"] > 0 and "blk.0.attn_norm.weight" not in tensors  # the --mtp export
    blocks = [] if mtp_only else [(f"model.layers.{i}.", t) for i, t in enumerate(cfg["layer_types"])]
    blocks += [(f"mtp.layers.{i}.", "full_attention") for i in range(cfg["mtp_num_hidden_layers"])]
    for p, t in blocks:
        expect.update({p + "input_layernorm.weight": [D], p + "post_attention_layernorm.weight": [D],
                       p + "mlp.gate_proj.weight": [F, D], p + "mlp.up_proj.weight": [F, D],
                       p + "mlp.down_proj.weight": [D, F]})
        if t == "linear_attention":
            expect.update({p + "linear_attn.in_proj_qkv.weight": [conv, D],
                           p + "linear_attn.in_proj_z.weight": [hv * dv, D],
                           p + "linear_attn.in_proj_b.weight": [hv, D], p + "linear_attn.in_proj_a.weight": [hv, D],
                           p + "linear_attn.conv1d.weight": [conv, 1, K], p + "linear_attn.dt_bias": [hv],
                           p + "linear_attn.A_log": [hv], p + "linear_attn.norm.weight": [dv],
                           p + "linear_attn.out_proj.weight": [D, hv * dv]})
        else:
            expect.update({p + "self_attn.q_proj.weight": [2 * H * hd, D], p + "self_attn.k_proj.weight": [Hkv * hd, D],
                           p + "self_attn.v_proj.weight": [Hkv * hd, D], p + "self_attn.o_proj.weight": [D, H * hd],
                           p + "self_attn.q_norm.weight": [hd], p + "self_attn.k_norm.weight": [hd]})
    if cfg["mtp_num_hidden_layers"]:
        expect.update({"mtp.fc.weight": [D, 2 * D], "mtp.pre_fc_norm_embedding.weight": [D],
                       "mtp.pre_fc_norm_hidden.weight": [D], "mtp.norm.weight": [D]})
    for name, shape in expect.items():
        if name not in hf:
            problems.append(f"missing {name}")
        elif hf[name][0] != shape:
            problems.append(f"{name}: shape {hf[name][0]}, transformers has {shape}")
    for name in hf:
        if name not in expect:
            problems.append(f"unexpected {name}")
    back = hf_to_gguf(hf, cfg)
    for name, (dims, values) in tensors.items():
        got = back.get(name)
        if got is None:
            problems.append(f"{name} does not come back")
            continue
        worst = max(abs(a - b) for a, b in zip(got, values))
        exact = not (name.endswith("norm.weight") or name.endswith("ssm_a")) or name.endswith("ssm_norm.weight")
        if (exact and worst != 0) or worst > 1e-6 * max(1.0, max(abs(v) for v in values)):
            problems.append(f"{name} comes back off by {worst:.3g}")
    # the permutation itself: grouped head k*per + r reads tiled head r*Hk + k
    perm = tiled_to_grouped(2, 3)
    if perm != [0, 2, 4, 1, 3, 5]:
        problems.append(f"tiled_to_grouped(2, 3) = {perm}")
    for p in problems:
        print("FAIL:", p)
    print(f"{path}: {len(tensors)} tensors -> {len(hf)} transformers names; mapping round trip "
          f"{'ok' if not problems else 'FAILED'}")
    return 1 if problems else 0


def record_base(path, kv, tensors, sha, cfg, generator):
    return {"generator": generator, "gguf": {"file": os.path.basename(path), "sha256": sha}, "config": cfg}


def python_reference(path, out):
    version, kv, tensors, sha = read_gguf(path)
    cfg = hf_config(kv, tensors)
    model = PyModel(cfg, gguf_to_hf(kv, tensors, cfg))
    rec = record_base(path, kv, tensors, sha, cfg, {
        "kind": "python-float64", "script": "tools/qwen35/make_golden.py --python-reference",
        "python": platform.python_version(),
        "what": "float64 transcription of transformers' Qwen3_5 (recurrent delta rule) and llama.cpp's graph_mtp"})
    rec["sequences"] = []
    for toks in sequences(cfg["vocab_size"]):
        logits, hidden = model.run(toks)
        entry = {"tokens": toks}
        record_rows(entry, "logits", logits)
        if cfg["mtp_num_hidden_layers"]:
            record_rows(entry, "mtp_logits", model.mtp(toks, hidden))
        rec["sequences"].append(entry)
    with open(out, "w") as f:
        json.dump(rec, f, separators=(",", ":"))
    print(f"wrote {out}")
    return 0


def torch_reference(path, out):
    import torch
    import transformers
    from transformers.models.qwen3_5 import modeling_qwen3_5 as mq
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    version, kv, tensors, sha = read_gguf(path)
    cfg = hf_config(kv, tensors)
    hf = gguf_to_hf(kv, tensors, cfg)
    conf_args = {k: v for k, v in cfg.items() if k != "mtp_num_hidden_layers"}
    config = mq.Qwen3_5TextConfig(**conf_args)
    config._attn_implementation = "eager"
    model = mq.Qwen3_5ForCausalLM(config).to(device=device, dtype=torch.float32).eval()
    state = {k: torch.tensor(v[1], dtype=torch.float32).reshape(v[0]) for k, v in hf.items()
             if not k.startswith("mtp.")}
    if cfg["tie_word_embeddings"]:
        state.pop("lm_head.weight", None)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (cfg["tie_word_embeddings"] and m == "lm_head.weight")]
    if missing or unexpected:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")

    # The MTP block as llama.cpp's graph_mtp, from transformers' own modules.
    mtp = None
    if cfg["mtp_num_hidden_layers"]:
        mconf = mq.Qwen3_5TextConfig(**{**conf_args, "num_hidden_layers": 1, "layer_types": ["full_attention"]})
        mconf._attn_implementation = "eager"
        mtp = torch.nn.ModuleDict({
            "layer": mq.Qwen3_5DecoderLayer(mconf, 0),
            "enorm": mq.Qwen3_5RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"]),
            "hnorm": mq.Qwen3_5RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"]),
            "norm": mq.Qwen3_5RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"]),
            "fc": torch.nn.Linear(2 * cfg["hidden_size"], cfg["hidden_size"], bias=False),
        })
        mstate = {}
        for k, (shape, vals) in hf.items():
            t = torch.tensor(vals, dtype=torch.float32).reshape(shape)
            if k.startswith("mtp.layers.0."):
                mstate["layer." + k[len("mtp.layers.0."):]] = t
            elif k == "mtp.fc.weight":
                mstate["fc.weight"] = t
            elif k == "mtp.pre_fc_norm_embedding.weight":
                mstate["enorm.weight"] = t
            elif k == "mtp.pre_fc_norm_hidden.weight":
                mstate["hnorm.weight"] = t
            elif k == "mtp.norm.weight":
                mstate["norm.weight"] = t
        mtp.load_state_dict(mstate, strict=True)
        mtp = mtp.to(device).eval()
        mrot = mq.Qwen3_5TextRotaryEmbedding(mconf).to(device)

    rec = record_base(path, kv, tensors, sha, cfg, {
        "kind": "transformers", "script": "tools/qwen35/make_golden.py --gguf", "device": device,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__},
        "numerics": "float32, eager attention, TF32 off; logits from one forward pass (chunked delta rule); "
                    "decode_logits token by token with the cache (recurrent rule)"})
    rec["sequences"] = []
    with torch.no_grad():
        for toks in sequences(cfg["vocab_size"]):
            ids = torch.tensor([toks], device=device)
            res = model(input_ids=ids)
            logits = res.logits[0].double().cpu()
            # the trunk output after model.norm, as llama.cpp hands to the MTP block
            hidden = model.model(input_ids=ids).last_hidden_state[0]
            cache = None
            steps = []
            for t in range(len(toks)):
                r = model(input_ids=ids[:, t:t + 1], past_key_values=cache, use_cache=True)
                cache = r.past_key_values
                steps.append(r.logits[0, -1].double().cpu())
            steps = torch.stack(steps)
            entry = {"tokens": toks, "decode_logits_max_abs_diff": float((steps - logits).abs().max())}
            record_rows(entry, "logits", logits.tolist())
            if mtp is not None:
                n = len(toks) - 1
                emb = model.model.embed_tokens(ids[:, 1:])
                x = mtp["fc"](torch.cat([mtp["enorm"](emb), mtp["hnorm"](hidden[None, :n])], dim=-1))
                pos = torch.arange(n, device=device)[None]
                pe = mrot(x, pos[None].expand(3, 1, n))
                mask = torch.full((n, n), float("-inf"), device=device).triu(1)[None, None]
                x = mtp["layer"](x, position_embeddings=pe, attention_mask=mask, position_ids=pos)
                if isinstance(x, tuple):
                    x = x[0]
                head = model.lm_head(mtp["norm"](x))[0].double().cpu()
                record_rows(entry, "mtp_logits", head.tolist())
            rec["sequences"].append(entry)
    with open(out, "w") as f:
        json.dump(rec, f, separators=(",", ":"))
    print(f"wrote {out}: decode vs one pass max |d| "
          + ", ".join(f"{e['decode_logits_max_abs_diff']:.2e}" for e in rec["sequences"]))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", help="the tiny qwen35 GGUF (F32 or BF16) to take the weights from")
    ap.add_argument("--out", help="the JSON to write (transformers run)")
    ap.add_argument("--selftest", metavar="GGUF", help="check the tensor mapping offline (no torch)")
    ap.add_argument("--python-reference", nargs=2, metavar=("GGUF", "OUT"),
                    help="float64 pure-Python reference logits (no torch)")
    args = ap.parse_args()
    if args.selftest:
        return selftest(args.selftest)
    if args.python_reference:
        return python_reference(*args.python_reference)
    if not (args.gguf and args.out):
        ap.error("--gguf and --out (or --selftest / --python-reference)")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed here; run this on the GPU machine (or use --selftest)")
        return 77
    return torch_reference(args.gguf, args.out)


if __name__ == "__main__":
    sys.exit(main())

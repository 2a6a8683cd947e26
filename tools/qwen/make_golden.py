#!/usr/bin/env python3
"""Builds the tiny random-weight Qwen3 golden models and their transformers references.

For each configuration in CONFIGS this script
  1. builds a transformers Qwen3Config + Qwen3ForCausalLM (float32, eager attention)
     with a fixed seed and re-draws the weights at scales that give well-separated
     logits (see randomise());
  2. writes the weights as GGUF v3 in llama.cpp's "qwen3" layout (the tensor names
     and keys convert_hf_to_gguf.py's Qwen3Model writes; no Q/K permutation, since
     Qwen3 uses NEOX RoPE), together with a small byte-level BPE vocabulary trained
     here on a fixed English text ("gpt2" model, "qwen2" pre-tokenizer);
  3. records references with transformers: full logits for three fixed token
     sequences, the hidden state after the final norm, greedy generations through
     model.generate(do_sample=False, use_cache=True) with the top-1/top-2 margin of
     every step, and token ids of a set of strings under the tiny vocabulary through
     the `tokenizers` library (the real Qwen2 pre-tokenizer regex + ByteLevel).

Outputs: <out>/<name>.gguf and <out>/<name>.json per model (see tests/golden/qwen/README.md).

    python3 tools/qwen/make_golden.py --out DIR               # needs torch + transformers
    python3 tools/qwen/make_golden.py --selftest DIR          # no torch: writes a GGUF of
                                                              # dummy data + the vocab only

Only the standard library is needed for the GGUF writer and the vocabulary, so they
can be tested where torch is absent.
"""

import argparse
import copy
import hashlib
import json
import os
import platform
import random
import re
import struct
import sys

SEED = 20250503
VOCAB_SIZE = 384

# ---------------------------------------------------------------------------
# Minimal GGUF v3 writer (spec: ggml/docs/gguf.md). Little-endian throughout.
# ---------------------------------------------------------------------------
GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# metadata value types
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
_SCALAR_FMT = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
               T_F32: "<f", T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}

# ggml tensor types
GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30
_TYPE_SIZE = {GGML_F32: 4, GGML_F16: 2, GGML_BF16: 2}

# llama_ftype values for general.file_type
FTYPE = {GGML_F32: 0, GGML_F16: 1, GGML_BF16: 32}


def _gguf_str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _gguf_value(vtype, value):
    if vtype == T_STR:
        return _gguf_str(value)
    if vtype == T_ARR:
        etype, items = value
        out = [struct.pack("<IQ", etype, len(items))]
        out.extend(_gguf_value(etype, it) for it in items)
        return b"".join(out)
    return struct.pack(_SCALAR_FMT[vtype], value)


class GGUFWriter:
    """Collects key/values and tensors, then writes one GGUF v3 file."""

    def __init__(self):
        self.kv = []        # (key, type, value)
        self.tensors = []   # (name, ggml_type, dims innermost-first, bytes)

    def add(self, key, vtype, value):
        assert key not in (k for k, _, _ in self.kv), key
        self.kv.append((key, vtype, value))

    def add_array(self, key, etype, items):
        self.add(key, T_ARR, (etype, list(items)))

    def add_tensor(self, name, ggml_type, dims, data):
        """dims innermost first (ggml order): a row-major torch [out, in] matrix is dims [in, out]."""
        n = 1
        for d in dims:
            n *= d
        assert len(data) == n * _TYPE_SIZE[ggml_type], (name, len(data), dims)
        assert name not in (t[0] for t in self.tensors), name
        self.tensors.append((name, ggml_type, list(dims), bytes(data)))

    def tobytes(self):
        head = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))]
        for key, vtype, value in self.kv:
            head.append(_gguf_str(key) + struct.pack("<I", vtype) + _gguf_value(vtype, value))
        offset = 0
        offsets = []
        for name, gtype, dims, data in self.tensors:
            offsets.append(offset)
            head.append(_gguf_str(name) + struct.pack("<I", len(dims)))
            head.append(struct.pack("<%dQ" % len(dims), *dims))
            head.append(struct.pack("<IQ", gtype, offset))
            offset += len(data)
            offset += (-offset) % ALIGNMENT
        blob = b"".join(head)
        blob += b"\0" * ((-len(blob)) % ALIGNMENT)
        parts = [blob]
        for (name, gtype, dims, data), off in zip(self.tensors, offsets):
            parts.append(data)
            parts.append(b"\0" * ((-len(data)) % ALIGNMENT))
        return b"".join(parts)

    def write(self, path):
        data = self.tobytes()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return hashlib.sha256(data).hexdigest()


def read_gguf(path):
    """Small reader used by the self-test: returns (kv dict, {name: (type, dims, bytes)})."""
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return vals

    def rstr():
        nonlocal pos
        (n,) = take("<Q")
        s = buf[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def rval(vt):
        if vt == T_STR:
            return rstr()
        if vt == T_ARR:
            et, n = take("<IQ")
            return [rval(et) for _ in range(n)]
        return take(_SCALAR_FMT[vt])[0]

    assert buf[:4] == GGUF_MAGIC
    pos = 4
    ver, nt, nkv = take("<IQQ")
    assert ver == 3
    kv = {}
    for _ in range(nkv):
        k = rstr()
        (vt,) = take("<I")
        kv[k] = rval(vt)
    infos = []
    for _ in range(nt):
        name = rstr()
        (nd,) = take("<I")
        dims = list(take("<%dQ" % nd))
        gt, off = take("<IQ")
        infos.append((name, gt, dims, off))
    pos += (-pos) % ALIGNMENT
    tensors = {}
    for name, gt, dims, off in infos:
        n = 1
        for d in dims:
            n *= d
        tensors[name] = (gt, dims, buf[pos + off:pos + off + n * _TYPE_SIZE[gt]])
    return kv, tensors


# ---------------------------------------------------------------------------
# Tiny byte-level BPE vocabulary in the Qwen2/Qwen3 layout.
# ---------------------------------------------------------------------------
# Qwen2's pre-tokenizer split (tokenizer.json); written for the `regex` module.
QWEN2_PRE_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                   r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# The same split restricted to ASCII input (\p{L} = [A-Za-z], \p{N} = [0-9]); exact for
# ASCII text, which is all the trainer and the built-in encoder ever see.
ASCII_PRE_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]|"
                   r" ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Added tokens, in Qwen3's relative order, with llama.cpp's token types:
# CONTROL (3) when added_tokens_decoder marks them special (or they look like <|...|>),
# USER_DEFINED (4) otherwise (Qwen3 marks <think>, <tool_call>, ... as special: false).
TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED = 1, 3, 4, 5
ADDED_TOKENS = [
    ("<|endoftext|>", TOKEN_CONTROL),
    ("<|im_start|>", TOKEN_CONTROL),
    ("<|im_end|>", TOKEN_CONTROL),
    ("<tool_call>", TOKEN_USER_DEFINED),
    ("</tool_call>", TOKEN_USER_DEFINED),
    ("<tool_response>", TOKEN_USER_DEFINED),
    ("</tool_response>", TOKEN_USER_DEFINED),
    ("<think>", TOKEN_USER_DEFINED),
    ("</think>", TOKEN_USER_DEFINED),
]
N_PAD = 3  # config vocab larger than the tokenizer: llama.cpp fills with "[PAD{i}]", type UNUSED
N_MERGES = VOCAB_SIZE - 256 - len(ADDED_TOKENS) - N_PAD

TRAINING_TEXT = """\
The quick brown fox jumps over the lazy dog. The dog did not move, and the fox ran
into the forest where the other animals were sleeping in the shade of the tall trees.
In the morning the sun rises over the hills and the birds begin to sing their songs.
There is a small river that runs through the valley, and the water is cold and clear.
The people of the town walk to the market to buy bread, cheese, fruit and vegetables.
Children play in the streets while their parents talk about the weather and the news.
When the evening comes, the lights of the houses turn on one by one, and the town is
quiet again. The old man at the corner reads his book and drinks a cup of tea.
He has lived there for a long time, and he knows the name of every person who passes.
It is the story of a place that does not change very much, and that is what they love.
A function takes an input and returns an output; the return value is then printed.
def main(): return the sum of the values in the list, then print the result to the screen.
"""


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode map, in GPT-2/Qwen vocabulary order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


BYTE_ORDER = bytes_to_unicode()
BYTE_ENCODER = dict(BYTE_ORDER)


def byte_level(text):
    return "".join(BYTE_ENCODER[b] for b in text.encode("utf-8"))


def train_bpe(text, n_merges):
    """Deterministic BPE training: repeatedly merge the most frequent adjacent pair
    (ties: the lexicographically smallest pair); a pair whose result already is a
    token is skipped so that every merge adds one new token."""
    words = {}
    for piece in re.findall(ASCII_PRE_REGEX, text):
        w = tuple(byte_level(piece))
        words[w] = words.get(w, 0) + 1
    vocab = set(c for _, c in BYTE_ORDER)
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + c
        cands = [(-c, p) for p, c in counts.items() if p[0] + p[1] not in vocab]
        if not cands:
            raise RuntimeError("training text too short for %d merges" % n_merges)
        _, best = min(cands)
        merges.append(best)
        vocab.add(best[0] + best[1])
        new_words = {}
        for w, c in words.items():
            out = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + c
        words = new_words
    return merges


def build_vocab():
    merges = train_bpe(TRAINING_TEXT, N_MERGES)
    tokens = [c for _, c in BYTE_ORDER] + [a + b for a, b in merges]
    types = [TOKEN_NORMAL] * len(tokens)
    for text, ttype in ADDED_TOKENS:
        tokens.append(text)
        types.append(ttype)
    for i in range(N_PAD):
        tokens.append("[PAD%d]" % len(tokens))
        types.append(TOKEN_UNUSED)
    assert len(tokens) == VOCAB_SIZE and len(set(tokens)) == VOCAB_SIZE
    return {
        "tokens": tokens,
        "types": types,
        "merges": ["%s %s" % m for m in merges],
        "ids": {t: i for i, t in enumerate(tokens)},
    }


def simple_encode(vocab, text):
    """Reference-free encoder for ASCII text with special-token splitting (used to make the
    prompt ids; cross-checked against the `tokenizers` library when it is available)."""
    ranks = {tuple(m.split(" ")): i for i, m in enumerate(vocab["merges"])}
    ids = vocab["ids"]
    specials = [t for t, _ in ADDED_TOKENS]
    pat = "(" + "|".join(re.escape(s) for s in specials) + ")"
    out = []
    for chunk in re.split(pat, text):
        if not chunk:
            continue
        if chunk in specials:
            out.append(ids[chunk])
            continue
        assert chunk.isascii()
        for piece in re.findall(ASCII_PRE_REGEX, chunk):
            parts = list(byte_level(piece))
            while len(parts) > 1:
                best = min(range(len(parts) - 1),
                           key=lambda i: ranks.get((parts[i], parts[i + 1]), 1 << 30))
                if (parts[best], parts[best + 1]) not in ranks:
                    break
                parts[best:best + 2] = [parts[best] + parts[best + 1]]
            out.extend(ids[p] for p in parts)
    return out


def add_tokenizer_kv(w, vocab):
    ids = vocab["ids"]
    w.add("tokenizer.ggml.model", T_STR, "gpt2")
    w.add("tokenizer.ggml.pre", T_STR, "qwen2")
    w.add_array("tokenizer.ggml.tokens", T_STR, vocab["tokens"])
    w.add_array("tokenizer.ggml.token_type", T_I32, vocab["types"])
    w.add_array("tokenizer.ggml.merges", T_STR, vocab["merges"])
    w.add("tokenizer.ggml.eos_token_id", T_U32, ids["<|im_end|>"])
    w.add("tokenizer.ggml.padding_token_id", T_U32, ids["<|endoftext|>"])
    w.add("tokenizer.ggml.bos_token_id", T_U32, ids["<|endoftext|>"])
    w.add("tokenizer.ggml.add_bos_token", T_BOOL, False)


# Strings whose ids under the tiny vocabulary are recorded with the `tokenizers` library.
TOKENIZER_STRINGS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world! It's a test: I'm sure they'll say we've done it, he'd agree.",
    "  leading spaces,   runs of spaces,\ttabs\nand\n\nnewlines  \n",
    "numbers 12345 and 3.14159, x=42;",
    "def main():\n    return sum(values)  # comment\n",
    "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nhi<|im_end|>",
    "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
    "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001F600 \u0394\u03b5\u03bb\u03c4\u03b1",
    "<|endoftext|>",
    "",
]

# ---------------------------------------------------------------------------
# Model configurations
# ---------------------------------------------------------------------------
CONFIGS = {
    # 2 layers, tied embeddings, GQA 4:2, head_dim 16, float32 weights.
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=16, intermediate_size=128, tie_word_embeddings=True, rope_theta=10000.0,
                 rms_norm_eps=1e-6, max_position_embeddings=256, weight_type=GGML_F32),
    # 3 layers, untied output, GQA 4:1, head_dim 32 (n_head*head_dim = 128 != hidden 64),
    # Qwen3's real rope_theta, float32 weights.
    "tiny-untied": dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=1,
                        head_dim=32, intermediate_size=96, tie_word_embeddings=False, rope_theta=1000000.0,
                        rms_norm_eps=1e-6, max_position_embeddings=256, weight_type=GGML_F32),
    # Every matrix's input dimension is a multiple of 256, so Q8_0/Q4_K/Q6_K can be applied to
    # all of them; 2-D weights stored as BF16 (the reference uses exactly these bf16 values).
    "tiny-256": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=64, intermediate_size=256, tie_word_embeddings=True, rope_theta=1000000.0,
                     rms_norm_eps=1e-6, max_position_embeddings=256, weight_type=GGML_BF16),
}

FORWARD_LENGTHS = [5, 17, 40]
GEN_PROMPTS = [
    "The quick brown fox",
    "Hello world, this is a test of the",
    "<|im_start|>user\nWhat is the time?<|im_end|>\n<|im_start|>assistant\n",
]
GEN_NEW_TOKENS = 24


def forward_sequences(vocab):
    """Fixed id sequences over every non-UNUSED id (specials included)."""
    rng = random.Random(SEED)
    usable = [i for i, t in enumerate(vocab["types"]) if t != TOKEN_UNUSED]
    return [[rng.choice(usable) for _ in range(n)] for n in FORWARD_LENGTHS]


def add_model_kv(w, name, cfg):
    a = "qwen3"
    w.add("general.architecture", T_STR, a)
    w.add("general.name", T_STR, "gufo golden " + name)
    w.add("%s.block_count" % a, T_U32, cfg["num_hidden_layers"])
    w.add("%s.context_length" % a, T_U32, cfg["max_position_embeddings"])
    w.add("%s.embedding_length" % a, T_U32, cfg["hidden_size"])
    w.add("%s.feed_forward_length" % a, T_U32, cfg["intermediate_size"])
    w.add("%s.attention.head_count" % a, T_U32, cfg["num_attention_heads"])
    w.add("%s.attention.head_count_kv" % a, T_U32, cfg["num_key_value_heads"])
    w.add("%s.rope.freq_base" % a, T_F32, cfg["rope_theta"])
    w.add("%s.attention.layer_norm_rms_epsilon" % a, T_F32, cfg["rms_norm_eps"])
    w.add("%s.attention.key_length" % a, T_U32, cfg["head_dim"])
    w.add("%s.attention.value_length" % a, T_U32, cfg["head_dim"])
    w.add("general.file_type", T_U32, FTYPE[cfg["weight_type"]])
    w.add("general.quantization_version", T_U32, 2)


def tensor_plan(cfg):
    """(gguf name, transformers parameter path, is_matrix) in llama.cpp's naming."""
    plan = [("token_embd.weight", "model.embed_tokens.weight", True)]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        b = "blk.%d." % i
        plan += [
            (b + "attn_norm.weight", p + "input_layernorm.weight", False),
            (b + "attn_q.weight", p + "self_attn.q_proj.weight", True),
            (b + "attn_k.weight", p + "self_attn.k_proj.weight", True),
            (b + "attn_v.weight", p + "self_attn.v_proj.weight", True),
            (b + "attn_q_norm.weight", p + "self_attn.q_norm.weight", False),
            (b + "attn_k_norm.weight", p + "self_attn.k_norm.weight", False),
            (b + "attn_output.weight", p + "self_attn.o_proj.weight", True),
            (b + "ffn_norm.weight", p + "post_attention_layernorm.weight", False),
            (b + "ffn_gate.weight", p + "mlp.gate_proj.weight", True),
            (b + "ffn_up.weight", p + "mlp.up_proj.weight", True),
            (b + "ffn_down.weight", p + "mlp.down_proj.weight", True),
        ]
    plan.append(("output_norm.weight", "model.norm.weight", False))
    if not cfg["tie_word_embeddings"]:
        plan.append(("output.weight", "lm_head.weight", True))
    return plan


def selftest(out_dir):
    """Writes <out>/selftest.gguf with the tiny config's layout and deterministic dummy data."""
    os.makedirs(out_dir, exist_ok=True)
    vocab = build_vocab()
    cfg = CONFIGS["tiny-untied"]
    w = GGUFWriter()
    add_model_kv(w, "selftest", cfg)
    add_tokenizer_kv(w, vocab)
    shapes = shapes_for(cfg)
    expect = {}
    for gname, _, is_matrix in tensor_plan(cfg):
        shape = shapes[gname]
        n = 1
        for d in shape:
            n *= d
        vals = [((i * 7919 + len(gname)) % 1000) / 1000.0 - 0.5 for i in range(n)]
        gtype = GGML_F16 if gname.endswith("attn_v.weight") else (
            GGML_BF16 if gname.endswith("ffn_up.weight") else GGML_F32)
        if gtype == GGML_F32:
            data = struct.pack("<%df" % n, *vals)
        elif gtype == GGML_F16:
            data = struct.pack("<%de" % n, *vals)
        else:
            data = b"".join(struct.pack("<f", v)[2:] for v in vals)  # truncating f32 -> bf16
        w.add_tensor(gname, gtype, list(reversed(shape)), data)
        expect[gname] = (gtype, list(reversed(shape)), data)
    path = os.path.join(out_dir, "selftest.gguf")
    w.write(path)
    kv, tensors = read_gguf(path)
    assert kv["general.architecture"] == "qwen3"
    assert kv["tokenizer.ggml.tokens"] == vocab["tokens"]
    assert kv["tokenizer.ggml.merges"] == vocab["merges"]
    assert tensors == expect
    print("selftest: wrote and re-read %s (%d KVs, %d tensors, %d bytes)"
          % (path, len(kv), len(tensors), os.path.getsize(path)))
    enc = simple_encode(vocab, GEN_PROMPTS[0])
    print("selftest: %d merges; %r -> %s" % (len(vocab["merges"]), GEN_PROMPTS[0], enc))
    print("selftest: first merges:", vocab["merges"][:12])


def shapes_for(cfg):
    """torch shapes ([out, in] for matrices) of every GGUF tensor."""
    h, hd, f = cfg["hidden_size"], cfg["head_dim"], cfg["intermediate_size"]
    nq, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    s = {"token_embd.weight": [VOCAB_SIZE, h], "output_norm.weight": [h], "output.weight": [VOCAB_SIZE, h]}
    for i in range(cfg["num_hidden_layers"]):
        b = "blk.%d." % i
        s.update({b + "attn_norm.weight": [h], b + "attn_q.weight": [nq * hd, h],
                  b + "attn_k.weight": [nkv * hd, h], b + "attn_v.weight": [nkv * hd, h],
                  b + "attn_q_norm.weight": [hd], b + "attn_k_norm.weight": [hd],
                  b + "attn_output.weight": [h, nq * hd], b + "ffn_norm.weight": [h],
                  b + "ffn_gate.weight": [f, h], b + "ffn_up.weight": [f, h], b + "ffn_down.weight": [h, f]})
    return s


# ---------------------------------------------------------------------------
# torch part
# ---------------------------------------------------------------------------
def fl(x):
    """float32 value as the shortest decimal that round-trips through float32 (<= 9 digits)."""
    for digits in (6, 7, 8, 9):
        s = "%.*g" % (digits, x)
        if struct.unpack("<f", struct.pack("<f", float(s)))[0] == x:
            return float(s)
    return float("%.9g" % x)


def run_models(out_dir, device_name, names):
    import torch
    import transformers
    from transformers import Qwen3Config, Qwen3ForCausalLM

    # "highest" (the default) keeps float32 matmuls in IEEE float32: no TF32.
    torch.set_float32_matmul_precision("highest")
    device = torch.device(device_name)
    os.makedirs(out_dir, exist_ok=True)
    vocab = build_vocab()
    ids = vocab["ids"]

    hf_tok, hf_tok_error = None, None
    try:
        hf_tok = make_hf_tokenizer(vocab)
    except Exception as e:  # recorded, not fatal: the model references do not depend on it
        hf_tok_error = "%s: %s" % (type(e).__name__, e)
        print("tokenizers library unusable:", hf_tok_error)

    versions = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.version.cuda,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
    }
    try:
        import tokenizers
        versions["tokenizers"] = tokenizers.__version__
    except Exception:
        pass
    print("versions:", versions)

    tok_ref = []
    if hf_tok is not None:
        for s in TOKENIZER_STRINGS:
            enc = hf_tok.encode(s, add_special_tokens=False).ids
            dec = hf_tok.decode(enc, skip_special_tokens=False)
            entry = {"text": s, "ids": enc, "decodes_back": dec == s}
            if s.isascii():
                entry["own_encoder_agrees"] = simple_encode(vocab, s) == enc
            tok_ref.append(entry)

    summary = {}
    for name in names:
        cfg = CONFIGS[name]
        seed = SEED + sum(map(ord, name))
        torch.manual_seed(seed)
        hf_cfg = Qwen3Config(
            vocab_size=VOCAB_SIZE, hidden_size=cfg["hidden_size"], intermediate_size=cfg["intermediate_size"],
            num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
            num_key_value_heads=cfg["num_key_value_heads"], head_dim=cfg["head_dim"], hidden_act="silu",
            max_position_embeddings=cfg["max_position_embeddings"], rms_norm_eps=cfg["rms_norm_eps"],
            tie_word_embeddings=cfg["tie_word_embeddings"],
            rope_parameters={"rope_type": "default", "rope_theta": cfg["rope_theta"]},
            attention_bias=False, use_sliding_window=False,
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
        hf_cfg._attn_implementation = "eager"
        model = Qwen3ForCausalLM(hf_cfg).to(torch.float32).eval()
        if hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation("eager")
        if cfg["tie_word_embeddings"]:
            model.tie_weights()
        params = dict(model.named_parameters(remove_duplicate=False))
        tied = params["lm_head.weight"].data_ptr() == params["model.embed_tokens.weight"].data_ptr()
        assert tied == cfg["tie_word_embeddings"], ("tying", tied)
        randomise(model, cfg, seed)
        if cfg["weight_type"] != GGML_F32:
            # Round the matrices to what the GGUF stores so the reference uses exactly those values.
            tdt = torch.bfloat16 if cfg["weight_type"] == GGML_BF16 else torch.float16
            with torch.no_grad():
                for _, path, is_matrix in tensor_plan(cfg):
                    if is_matrix:
                        p = params[path]
                        p.copy_(p.to(tdt).to(torch.float32))
        if cfg["tie_word_embeddings"]:
            assert params["lm_head.weight"].data_ptr() == params["model.embed_tokens.weight"].data_ptr()

        # RoPE sanity: the model's inverse frequencies follow rope_theta and head_dim.
        hd = cfg["head_dim"]
        want = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        inv = getattr(getattr(model.model, "rotary_emb", None), "inv_freq", None)
        if inv is not None:
            assert torch.allclose(inv.double(), want, rtol=1e-5), ("rope_theta not applied", inv, want)
        assert float(model.config.rope_parameters["rope_theta"]) == cfg["rope_theta"]
        assert model.config._attn_implementation == "eager", model.config._attn_implementation

        # GGUF
        w = GGUFWriter()
        add_model_kv(w, name, cfg)
        add_tokenizer_kv(w, vocab)
        shapes = shapes_for(cfg)
        for gname, path, is_matrix in tensor_plan(cfg):
            t = params[path].detach().cpu().contiguous()
            assert list(t.shape) == shapes[gname], (gname, list(t.shape), shapes[gname])
            gtype = cfg["weight_type"] if is_matrix else GGML_F32
            if gtype == GGML_F32:
                data = t.numpy().astype("<f4").tobytes()
            elif gtype == GGML_F16:
                data = t.to(torch.float16).numpy().astype("<f2").tobytes()
            else:
                data = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
            w.add_tensor(gname, gtype, list(reversed(t.shape)), data)
        gguf_path = os.path.join(out_dir, name + ".gguf")
        sha = w.write(gguf_path)

        model_dev = model.to(device)
        seqs = forward_sequences(vocab)
        fwd = []
        all_max = 0.0
        with torch.no_grad():
            for seq in seqs:
                x = torch.tensor([seq], device=device)
                out = model_dev(input_ids=x, use_cache=False)
                logits = out.logits[0].float().cpu()
                all_max = max(all_max, logits.abs().max().item())
                top2 = torch.topk(logits, 2, dim=-1)
                fwd.append({
                    "ids": seq,
                    "top1": top2.indices[:, 0].tolist(),
                    "top1_margin": [fl(v) for v in (top2.values[:, 0] - top2.values[:, 1]).tolist()],
                    "logits": [[fl(v) for v in row] for row in logits.tolist()],
                })
            # hidden state after the final norm, for the longest sequence
            x = torch.tensor([seqs[-1]], device=device)
            hid = model_dev.model(input_ids=x, use_cache=False).last_hidden_state[0].float().cpu()
            lm_w = params["lm_head.weight"].detach().float().cpu()
            recon = (hid.double() @ lm_w.double().T)
            recon_err = (recon - torch.tensor(fwd[-1]["logits"], dtype=torch.float64)).abs().max().item()

        # float64 CPU cross-check of the forward logits
        m64 = copy.deepcopy(model_dev).to("cpu").to(torch.float64).eval()
        f64_diff = []
        with torch.no_grad():
            for entry in fwd:
                l64 = m64(input_ids=torch.tensor([entry["ids"]]), use_cache=False).logits[0]
                f64_diff.append((l64 - torch.tensor(entry["logits"], dtype=torch.float64)).abs().max().item())

        # greedy generation
        gens = []
        model_dev.generation_config.eos_token_id = None
        model_dev.generation_config.pad_token_id = ids["<|endoftext|>"]
        eog = {ids["<|im_end|>"], ids["<|endoftext|>"]}
        for text in GEN_PROMPTS:
            if hf_tok is not None:
                p_ids = hf_tok.encode(text, add_special_tokens=False).ids
            else:
                p_ids = simple_encode(vocab, text)
            x = torch.tensor([p_ids], device=device)
            with torch.no_grad():
                g = model_dev.generate(
                    input_ids=x, attention_mask=torch.ones_like(x), do_sample=False, use_cache=True,
                    max_new_tokens=GEN_NEW_TOKENS, min_new_tokens=0, eos_token_id=None,
                    pad_token_id=ids["<|endoftext|>"], return_dict_in_generate=True, output_logits=True,
                    num_beams=1)
            new = g.sequences[0, len(p_ids):].tolist()
            margins, steps_top1 = [], []
            for step_logits in g.logits:
                lv = step_logits[0].float().cpu()
                t2 = torch.topk(lv, 2)
                margins.append(fl((t2.values[0] - t2.values[1]).item()))
                steps_top1.append(t2.indices[0].item())
            assert steps_top1 == new, "generate() did not follow the raw-logit argmax"
            # no-cache float64 CPU greedy replay
            seq = list(p_ids)
            with torch.no_grad():
                for _ in range(GEN_NEW_TOKENS):
                    l64 = m64(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
                    seq.append(int(torch.argmax(l64).item()))
            gens.append({
                "prompt_text": text,
                "prompt_ids": p_ids,
                "generated_ids": new,
                "top1_margin": margins,
                "min_margin": min(margins),
                "contains_end_of_generation_token": any(t in eog for t in new),
                "f64_cpu_nocache_agrees": seq[len(p_ids):] == new,
            })

        record = {
            "name": name,
            "gguf": name + ".gguf",
            "gguf_sha256": sha,
            "generator": {
                "command": "python3 tools/qwen/make_golden.py --out DIR",
                "versions": versions,
                "seed": seed,
                "float32_matmul_precision": "highest (no TF32)",
                "attn_implementation": "eager",
            },
            "config": {
                "architecture": "qwen3", "vocab_size": VOCAB_SIZE,
                "hidden_size": cfg["hidden_size"], "num_hidden_layers": cfg["num_hidden_layers"],
                "num_attention_heads": cfg["num_attention_heads"],
                "num_key_value_heads": cfg["num_key_value_heads"], "head_dim": cfg["head_dim"],
                "intermediate_size": cfg["intermediate_size"],
                "tie_word_embeddings": cfg["tie_word_embeddings"], "rope_theta": cfg["rope_theta"],
                "rope_type": "neox (rotate_half)", "rms_norm_eps": cfg["rms_norm_eps"],
                "context_length": cfg["max_position_embeddings"],
                "matrix_type": {GGML_F32: "f32", GGML_F16: "f16", GGML_BF16: "bf16"}[cfg["weight_type"]],
                "norm_type": "f32",
            },
            "special_ids": {t: ids[t] for t, _ in ADDED_TOKENS},
            "eos_token_id": ids["<|im_end|>"],
            "logit_abs_max": fl(all_max),
            "forward": fwd,
            "forward_f64_cpu_max_abs_diff": f64_diff,
            "final_norm_hidden": {
                "sequence_index": len(seqs) - 1,
                "values": [[fl(v) for v in row] for row in hid.tolist()],
                "logits_from_hidden_max_abs_diff": recon_err,
            },
            "generation": gens,
            "tokenizer_reference": tok_ref if tok_ref else None,
            "tokenizer_reference_error": hf_tok_error,
        }
        jpath = os.path.join(out_dir, name + ".json")
        with open(jpath, "w") as f:
            json.dump(record, f, separators=(",", ":"))
            f.write("\n")
        summary[name] = {
            "gguf_bytes": os.path.getsize(gguf_path), "json_bytes": os.path.getsize(jpath),
            "logit_abs_max": all_max, "f64_diff": f64_diff,
            "min_forward_margin": min(min(e["top1_margin"]) for e in fwd),
            "gen": [(g_["generated_ids"], g_["min_margin"], g_["f64_cpu_nocache_agrees"],
                     g_["contains_end_of_generation_token"]) for g_ in gens],
            "recon_err": recon_err,
        }
        print(name, json.dumps(summary[name]))
    if tok_ref:
        print("tokenizer reference:", json.dumps([(e["ids"], e["decodes_back"], e.get("own_encoder_agrees"))
                                                  for e in tok_ref]))
    return summary


def randomise(model, cfg, seed):
    """Re-draws every weight: matrices N(0, 1/in) so activations keep unit scale through the
    blocks, the output (or tied embedding) matrix N(0, (4/sqrt(hidden))^2) so that logits
    (final-norm output of RMS ~1 times that matrix) have a spread of about 4 and top-1/top-2
    margins far above float32 noise, and all RMSNorm weights (incl. the per-head Q/K norms)
    1 + 0.1 * N(0, 1)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    h = cfg["hidden_size"]
    with torch.no_grad():
        for path, p in model.named_parameters():  # shared (tied) parameters appear once
            if p.dim() == 1:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif path in ("lm_head.weight",) or (path == "model.embed_tokens.weight" and cfg["tie_word_embeddings"]):
                p.copy_(torch.randn(p.shape, generator=gen) * (4.0 / h ** 0.5))
            elif path == "model.embed_tokens.weight":
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)


def make_hf_tokenizer(vocab):
    """The tiny vocabulary as a `tokenizers` Tokenizer configured like Qwen2/Qwen3's tokenizer.json."""
    from tokenizers import Tokenizer, Regex, AddedToken, models, pre_tokenizers, decoders, normalizers
    bpe_vocab = {t: i for i, t in enumerate(vocab["tokens"][:256 + len(vocab["merges"])])}
    merges = [tuple(m.split(" ")) for m in vocab["merges"]]
    tok = Tokenizer(models.BPE(vocab=bpe_vocab, merges=merges, byte_fallback=False, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PRE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    added = []
    for text, ttype in ADDED_TOKENS:
        added.append(AddedToken(text, single_word=False, lstrip=False, rstrip=False, normalized=False,
                                special=(ttype == TOKEN_CONTROL)))
    n = tok.add_tokens(added)
    assert n == len(added)
    for text, _ in ADDED_TOKENS:
        assert tok.token_to_id(text) == vocab["ids"][text], text
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory for <name>.gguf / <name>.json")
    ap.add_argument("--selftest", metavar="DIR", help="write DIR/selftest.gguf without torch and re-read it")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    ap.add_argument("--models", default=",".join(CONFIGS), help="comma-separated subset of " + ",".join(CONFIGS))
    args = ap.parse_args()
    if args.selftest:
        selftest(args.selftest)
        return 0
    if not args.out:
        ap.error("--out or --selftest is required")
    import torch
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    run_models(args.out, dev, args.models.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())

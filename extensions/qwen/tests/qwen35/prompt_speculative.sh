#!/bin/sh
# `gufo prompt --speculative mtp` on the tiny random qwen35 model prints exactly what plain
# greedy decoding prints, for a few draft-friendly and draft-hostile prompts, and so does a
# three-turn `gufo chat --speculative mtp` (replies, reasoning and stderr); `gufo bench
# --speculative mtp` measures generation by drafts and verify steps and reports them; on a file
# without the MTP block it is refused before anything is generated, saying why (the
# speculative interface's `available` slot, API 0.2.11).
# Usage: prompt_speculative.sh GUFO RANDOM_MODEL_TOOL SCRATCH_DIR
set -eu
gufo=$1 tool=$2 dir=$3
# MTP speculation is qwen35-cpu's (qwen35-gpu has none yet): hide a GPU so the CPU provider serves.
export CUDA_VISIBLE_DEVICES= HIP_VISIBLE_DEVICES=
if [ -z "$gufo" ]; then
    echo "no gufo binary in this build: skipped"
    exit 77
fi
mkdir -p "$dir"
model="$dir/prompt-speculative-f32.gguf" plain_model="$dir/prompt-speculative-no-mtp-f32.gguf"
"$tool" --type f32 --out "$model"
"$tool" --type f32 --no-mtp --out "$plain_model"
for prompt in "hello" "the cat sat on the mat" "a"; do
    "$gufo" prompt --model "$model" --threads 2 -n 40 --temperature 0 "$prompt" >"$dir/plain.txt" 2>"$dir/plain.err"
    "$gufo" prompt --model "$model" --threads 2 -n 40 --temperature 0 --speculative mtp --verbose "$prompt" \
        >"$dir/mtp.txt" 2>"$dir/mtp.err"
    if ! cmp -s "$dir/plain.txt" "$dir/mtp.txt"; then
        echo "prompt '$prompt': --speculative mtp printed other text than plain decoding" >&2
        diff "$dir/plain.txt" "$dir/mtp.txt" >&2 || true
        exit 1
    fi
    if ! grep -q "speculative mtp" "$dir/mtp.err"; then
        echo "prompt '$prompt': the run does not say it speculated:" >&2
        cat "$dir/mtp.err" >&2
        exit 1
    fi
    echo "prompt '$prompt': $(wc -c <"$dir/mtp.txt") bytes, equal"
done
printf 'hello\nthe cat sat on the mat\nand then?\n' >"$dir/chat-in.txt"
"$gufo" chat --model "$model" --threads 2 -n 30 --temperature 0 <"$dir/chat-in.txt" >"$dir/chat-plain.txt" \
    2>"$dir/chat-plain.err"
"$gufo" chat --model "$model" --threads 2 -n 30 --temperature 0 --speculative mtp <"$dir/chat-in.txt" \
    >"$dir/chat-mtp.txt" 2>"$dir/chat-mtp.err"
if ! cmp -s "$dir/chat-plain.txt" "$dir/chat-mtp.txt" || ! cmp -s "$dir/chat-plain.err" "$dir/chat-mtp.err"; then
    echo "gufo chat --speculative mtp replied otherwise than plain decoding:" >&2
    diff "$dir/chat-plain.txt" "$dir/chat-mtp.txt" >&2 || true
    diff "$dir/chat-plain.err" "$dir/chat-mtp.err" >&2 || true
    exit 1
fi
"$gufo" chat --model "$model" --threads 2 -n 30 --temperature 0 --speculative mtp --verbose <"$dir/chat-in.txt" \
    >/dev/null 2>"$dir/chat-mtp-verbose.err"
if ! grep -q "speculative mtp: .* drafts accepted" "$dir/chat-mtp-verbose.err"; then
    echo "gufo chat --speculative mtp --verbose does not report its drafts:" >&2
    cat "$dir/chat-mtp-verbose.err" >&2
    exit 1
fi
echo "chat: 3 turns, $(wc -c <"$dir/chat-mtp.txt") + $(wc -c <"$dir/chat-mtp.err") bytes, equal; $(grep "drafts accepted" "$dir/chat-mtp-verbose.err" | tail -1)"
"$gufo" bench --model "$model" --threads 2 -p 0 -n 24 -r 2 --speculative mtp --json >"$dir/bench.json"
python3 - "$dir/bench.json" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))
sp = r["speculative"]
# 2 runs of 24 tokens: every step yields 1 + its accepted drafts, and the steps drafted something.
assert r["test"] == "tg24+mtp @ d0" and sp["method"] == "mtp", r
assert sp["steps"] + sp["accepted"] == 48 and 0 < sp["drafted"] and sp["accepted"] <= sp["drafted"], sp
assert r["avg_ts"] > 0, r
print(f"bench: {sp['steps']} steps, {sp['accepted']} of {sp['drafted']} drafts accepted, {r['avg_ts']:.0f} tok/s")
PY
if "$gufo" prompt --model "$plain_model" --threads 2 -n 8 --temperature 0 --speculative mtp "hello" \
    >"$dir/no-mtp.out" 2>"$dir/no-mtp.err"; then
    echo "a file without the MTP block ran --speculative mtp" >&2
    exit 1
fi
if [ -s "$dir/no-mtp.out" ] || grep -q "drafting failed" "$dir/no-mtp.err"; then
    echo "a file without the MTP block was refused only after generating:" >&2
    cat "$dir/no-mtp.out" "$dir/no-mtp.err" >&2
    exit 1
fi
if ! grep -q "not available for this model.*MTP block" "$dir/no-mtp.err"; then
    echo "a file without the MTP block failed without saying why:" >&2
    cat "$dir/no-mtp.err" >&2
    exit 1
fi
echo "without MTP: $(cat "$dir/no-mtp.err")"

#!/bin/bash
# gpu_device_run.sh — qwen35-gpu on a GPU machine, in one call: its tests against
# qwen35-cpu, speed on the tiny model and on a Qwen3.8-27B-shaped random file,
# qwen-gpu's tests (the GPU code the two providers share), and the conformance kit
# for qwen35-gpu and qwen-gpu — most important first, each part's summary printed as it ends.
#
#   OUT=/tmp/out [TYPES="q4_k_m q8_0"] [LAYERS=64] bash extensions/qwen/tests/qwen35/gpu_device_run.sh STAGE_DIR
#
# STAGE_DIR is what gpu_device_stage.sh wrote here (carried to the device).
# Run from the repository root. Results land in $OUT (smi.txt, diagnose.txt,
# qwen35_gpu_tests.log, bench.txt, qwen_gpu_tests.log, conformance-PROVIDER.txt/.log).
# Models are random: speed does not depend on weight values. TYPES (default
# q4_k_m; the 27B Q4_K_M file is 16.5 GB, Q8_0 about 29 GB, one on the disk at a
# time) and LAYERS (the 27B shape's 64 blocks, a multiple of 4) trim the bench.
S=${1:?usage: gpu_device_run.sh STAGE_DIR}
OUT=${OUT:?set OUT to a directory for the results}
S=$(cd "$S" && pwd)
BIN=$S/bin
W=/tmp/q35gpu-run
mkdir -p "$OUT" "$W"
START=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/smi.txt" 2>&1
"$BIN/gufo" diagnose --section extensions > "$OUT/diagnose.txt" 2>&1
head -2 "$OUT/smi.txt"
grep -E "qwen35-(gpu|cpu)" "$OUT/diagnose.txt" | head -4

echo "== qwen_qwen35_gpu_tests"
timeout 240 "$BIN/qwen_qwen35_gpu_tests" "$BIN/qwen_qwen35_random_model" "$W/tiny" "$BIN/qwen_random_model" \
    "$S/qwen3-vocab.gguf" > "$OUT/qwen35_gpu_tests.log" 2>&1
echo "rc=$? after $((SECONDS - START)) s" >> "$OUT/qwen35_gpu_tests.log"
grep -E "^(device|qwen35-gpu-vs-cpu|SKIP)|failed|expected|rc=" "$OUT/qwen35_gpu_tests.log" | head -60

echo "== bench"
{
  echo "== tiny q8_0 ($((SECONDS - START)) s)"
  timeout 60 "$BIN/gufo" bench --model "$W/tiny/gpu-q8_0.gguf" -p 512 -n 128 -r 3 --verbose 2>&1
  VOCAB=$S/qwen3-vocab-qwen35-pre.gguf
  for t in ${TYPES-q4_k_m}; do
    [ -f "$VOCAB" ] || { echo "no vocabulary staged: 27B bench skipped"; break; }
    f=$W/q35-27b-${LAYERS:-64}-$t.gguf
    rm -f "$W"/q35-27b-*.gguf.tmp
    [ -f "$f" ] || "$BIN/qwen_random_model" --shape 27b --layers "${LAYERS:-64}" --context 131072 --type "$t" \
        --vocab "$VOCAB" --out "$f" 2>&1 | tail -1
    echo "== 27b ${LAYERS:-64} blocks $t ($((SECONDS - START)) s)"
    timeout 200 "$BIN/gufo" bench --model "$f" -p 512 -n 128 -r 2 --verbose 2>&1
    echo "rc=$?"
    rm -f "$f" # the disk holds one 27B file at a time
  done
  echo "total $((SECONDS - START)) s"
} > "$OUT/bench.txt" 2>&1
grep -E "^==|^\||rc=|^total|on the GPU|declin|rror|wrote" "$OUT/bench.txt" | head -40

echo "== qwen_gpu_tests (qwen-gpu, sharing step_gpu/products_gpu/probe code)"
timeout 180 "$BIN/qwen_gpu_tests" tests/golden/qwen "$W" > "$OUT/qwen_gpu_tests.log" 2>&1
echo "rc=$? after $((SECONDS - START)) s" >> "$OUT/qwen_gpu_tests.log"
echo "$(grep -c '^gpu-vs-cpu' "$OUT/qwen_gpu_tests.log") model lines, $(grep -c failed "$OUT/qwen_gpu_tests.log") failure lines, $(tail -1 "$OUT/qwen_gpu_tests.log")"
grep failed "$OUT/qwen_gpu_tests.log" | head -5

echo "== conformance qwen35-gpu"
# The driver finds the extension's sources where they were built: link them there.
SRC=$(cat "$S/source_dir" 2>/dev/null)
if [ -n "$SRC" ] && [ ! -e "$SRC" ]; then mkdir -p "$(dirname "$SRC")" && ln -s "$PWD" "$SRC"; fi
mkdir -p "$W/ext/qwen/qwen35" "$W/tests/golden"
"$BIN/qwen_qwen35_random_model" --type f32 --out "$W/ext/qwen/qwen35/conformance-f32.gguf"
# qwen's other conformance artifact is ../../tests/golden/qwen/tiny.gguf from the extensions build dir.
[ -e "$W/tests/golden/qwen" ] || ln -s "$PWD/tests/golden/qwen" "$W/tests/golden/qwen"
# qwen-gpu too: the memory suite holds GPU providers to device budgets (and the two share GPU code).
for p in qwen35-gpu qwen-gpu; do
  (cd "$W" && timeout 150 "$BIN/gufo_conformance" --extension qwen --provider $p --extensions-build-dir "$W/ext" \
      --work-dir "$W/conformance-$p" --summary "$OUT/conformance-$p.txt" > "$OUT/conformance-$p.log" 2>&1)
  echo "rc=$? after $((SECONDS - START)) s" >> "$OUT/conformance-$p.txt"
  echo "-- $p"
  grep -E "FAIL|total:|rc=" "$OUT/conformance-$p.txt" | head -12
done

#!/bin/bash
# gpu_device_run.sh — qwen-gpu on a GPU machine: the GPU tests, then the speed check
# the README's GPU section reports, and each kernel alone (qwen_gpu_kernel_bench).
# Run from the repository root:
#
#   OUT=/tmp/out SPECS="0.6b:q4_k_m 8b:q4_k_m 8b:q8_0 8b:bf16" DEEP=8b-q4_k_m \
#       bash extensions/qwen/tests/gpu_device_run.sh BUILD_DIR
#
# BUILD_DIR is a build of this tree with nvcc (cmake -DGUFO_EXTENSIONS=qwen is
# enough; built here, it needs libcublas from the machine's CUDA toolkit and,
# when the machine lacks them, libcjson/libmicrohttpd/libpcre2 copied into
# BUILD_DIR/lib). Results land in $OUT: kernel_bench.txt, gpu_tests.log, bench.txt,
# diagnose.txt, prompt.txt, smi.txt. Models are random (qwen_random_model):
# speed does not depend on weight values.
B=${1:?usage: gpu_device_run.sh BUILD_DIR}
OUT=${OUT:?set OUT to a directory for the results}
Q=$B/gufo_extensions/qwen
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e $d/libcublas.so.13 ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
done
START=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $OUT/smi.txt 2>&1
$B/host/gufo diagnose > $OUT/diagnose.txt 2>&1
timeout 180 $Q/qwen_gpu_kernel_bench > $OUT/kernel_bench.txt 2>&1
echo "rc=$? after $(( $(date +%s) - START )) s" >> $OUT/kernel_bench.txt
timeout 240 $Q/qwen_gpu_tests tests/golden/qwen /tmp > $OUT/gpu_tests.log 2>&1
echo "rc=$? after $(( $(date +%s) - START )) s" >> $OUT/gpu_tests.log
timeout 60 $B/host/gufo prompt --model tests/golden/qwen/tiny.gguf --verbose -n 24 --temperature 0 "Hello there" \
    > $OUT/prompt.txt 2>&1
for spec in ${SPECS:-0.6b:q4_k_m 8b:q4_k_m}; do
  shape=${spec%%:*}; type=${spec##*:}
  $Q/qwen_random_model --shape $shape --type $type --vocab $Q/qwen3-vocab.gguf --out /tmp/$shape-$type.gguf \
      > /dev/null 2>> $OUT/bench.txt
  echo "== $shape $type ($(( $(date +%s) - START )) s)" >> $OUT/bench.txt
  timeout 100 $B/host/gufo bench --model /tmp/$shape-$type.gguf -p 512 -n 128 -r 3 --verbose >> $OUT/bench.txt 2>&1
  echo "rc=$?" >> $OUT/bench.txt
done
if [ -n "$DEEP" ]; then
  echo "== $DEEP at depth 4096, pp4096, pp32768, and the exact fp32 products" >> $OUT/bench.txt
  timeout 150 $B/host/gufo bench --model /tmp/$DEEP.gguf -p 512 -n 128 -d 4096 -r 1 >> $OUT/bench.txt 2>&1
  timeout 100 $B/host/gufo bench --model /tmp/$DEEP.gguf -p 4096 -n 0 -r 2 >> $OUT/bench.txt 2>&1
  timeout 100 $B/host/gufo bench --model /tmp/$DEEP.gguf -p 32768 -n 0 -r 1 >> $OUT/bench.txt 2>&1
  timeout 100 $B/host/gufo bench --model /tmp/$DEEP.gguf -p 512 -n 128 -r 2 --qwen-gpu-prefill fp32 \
      --qwen-gpu-decode fp32 >> $OUT/bench.txt 2>&1
fi
echo "total $(( $(date +%s) - START )) s" >> $OUT/bench.txt

#!/bin/bash
# Device check after API 0.2 steps + Q8_0 packing: GPU tests and speed (qwen-gpu),
# AMX/AVX-512 packed kernels' bits and speed on the host CPU (2 pinned cores, GPUs hidden).
B=.devbuild; Q=$B/gufo_extensions/qwen; S=$SECONDS
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/runtime:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
t() { echo "== $* ($((SECONDS-S)) s)"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; lscpu | grep -E "Model name|Flags" | cut -c1-400; } > $OUT/machine.txt 2>&1
$B/host/gufo diagnose > $OUT/diagnose.txt 2>&1
{ t cpu kernels test; timeout 120 $B/tests/runtime/test_runtime_cpu_kernels; echo rc=$?; } > $OUT/cpu_kernels_test.txt 2>&1
{ t matmul bench
  for p in "" --packed; do for th in 1 2; do CUDA_VISIBLE_DEVICES= taskset -c 2,3 $B/tests/runtime/cpu_matmul_bench $p --threads $th --seconds 2; done; done
  for p in "" --packed; do taskset -c 2 $B/tests/runtime/cpu_matmul_bench $p --rows 256 --seconds 1; done
  for n in 16 512; do for p in "" --packed; do taskset -c 2 $B/tests/runtime/cpu_matmul_bench $p --rows 4096 --vectors $n --seconds 1; done; done
} > $OUT/cpu_matmul_bench.txt 2>&1
for ty in q8_0 q4_k_m; do $Q/qwen_random_model --shape 0.6b --type $ty --vocab $Q/qwen3-vocab.gguf --out /tmp/q06-$ty.gguf --threads 16 > /dev/null 2>&1; done
{ t cpu bench; for ty in q8_0 q4_k_m; do CUDA_VISIBLE_DEVICES= taskset -c 2,3 timeout 120 $B/host/gufo bench --model /tmp/q06-$ty.gguf -p 512 -n 128 -r 3 --threads 2 --verbose; done; } > $OUT/cpu_bench.txt 2>&1
{ t gpu tests; timeout 200 $Q/qwen_gpu_tests tests/golden/qwen /tmp; echo rc=$?; } > $OUT/gpu_tests.log 2>&1
$Q/qwen_random_model --shape 8b --type q4_k_m --vocab $Q/qwen3-vocab.gguf --out /tmp/q8b.gguf --threads 16 > /dev/null 2>&1
{ t gpu bench; for m in /tmp/q8b.gguf /tmp/q06-q4_k_m.gguf; do timeout 100 $B/host/gufo bench --model $m -p 512 -n 128 -r 3 --verbose; done; t done; } > $OUT/gpu_bench.txt 2>&1
timeout 30 $B/host/gufo prompt --model tests/golden/qwen/tiny.gguf -n 16 --temperature 0 "Hello there" > $OUT/prompt.txt 2>&1
echo "total $((SECONDS-S)) s" >> $OUT/gpu_bench.txt

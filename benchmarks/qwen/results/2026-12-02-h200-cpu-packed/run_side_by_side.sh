#!/bin/bash
# CPU side by side on the device host: gufo (Q8_0 packed) vs llama.cpp built here, 2 pinned cores,
# plus the packed AMX kernels' bits (test_runtime_cpu_kernels) and speed (cpu_matmul_bench).
# LLAMA_BENCH: the llama-bench of a llama.cpp CPU build made on the same host (not made here).
LLAMA_BENCH=${LLAMA_BENCH:?set LLAMA_BENCH to a llama-bench built on this host}
B=.devbuild; Q=$B/gufo_extensions/qwen; S=$SECONDS; M=/tmp/m
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/runtime CUDA_VISIBLE_DEVICES=
t() { echo "== $* ($((SECONDS-S)) s)"; }
{ t cpu kernels test; timeout 120 $B/tests/runtime/test_runtime_cpu_kernels; echo rc=$?; } > $OUT/cpu_kernels_test.txt 2>&1
{ t matmul bench; for n in 16 32 64 512; do for p in "" --packed; do taskset -c 2 $B/tests/runtime/cpu_matmul_bench $p --rows 4096 --vectors $n --seconds 1; done; done; } > $OUT/cpu_matmul_bench.txt 2>&1
mkdir -p $M; for s in 0.6b 1.7b; do for ty in q8_0 q4_k_m; do $Q/qwen_random_model --shape $s --type $ty --vocab $Q/qwen3-vocab.gguf --out $M/qwen3-$s-$ty.gguf --threads 12 > /dev/null 2>&1; done; done
{ for f in $M/qwen3-0.6b-q8_0.gguf $M/qwen3-0.6b-q4_k_m.gguf $M/qwen3-1.7b-q8_0.gguf $M/qwen3-1.7b-q4_k_m.gguf; do
  r=3; case $f in *1.7b*) r=2;; esac
  t gufo $f; taskset -c 2,3 timeout 90 $B/host/gufo bench --model $f -p 512 -n 128 -r $r --threads 2
  t llama.cpp $f; taskset -c 2,3 timeout 90 $LLAMA_BENCH -m $f -p 512 -n 128 -r $r -t 2
  done; t done; } > $OUT/side_by_side.txt 2>&1

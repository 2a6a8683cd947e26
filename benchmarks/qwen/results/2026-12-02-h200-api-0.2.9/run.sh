#!/bin/bash
# Device check of API 0.2.7-0.2.9 + qwen model base + qwen35-cpu (issues 13, 14):
# qwen-gpu tests and speed unchanged, transformers 5.17 golden references for the tiny qwen35 model.
B=.devbuild; S=$SECONDS
export LD_LIBRARY_PATH=$PWD/$B/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
t() { echo "== $* ($((SECONDS-S)) s)"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; lscpu | grep -E "Model name"; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; } > $OUT/machine.txt 2>&1
$B/bin/gufo diagnose > $OUT/diagnose.txt 2>&1
{ t qwen35 golden
  for ty in f32 bf16; do $B/bin/qwen_qwen35_random_model --type $ty --out /tmp/tiny-$ty.gguf && timeout 150 python3 tools/qwen35/make_golden.py --gguf /tmp/tiny-$ty.gguf --out $OUT/tiny-$ty.json; echo "$ty rc=$?"; done
} > $OUT/qwen35_golden.log 2>&1
{ t gpu tests; timeout 200 $B/bin/qwen_gpu_tests tests/golden/qwen /tmp; echo rc=$?; } > $OUT/gpu_tests.log 2>&1
$B/bin/qwen_random_model --shape 8b --type q4_k_m --vocab $B/qwen3-vocab.gguf --out /tmp/q8b.gguf --threads 16 > /dev/null 2>&1
$B/bin/qwen_random_model --shape 0.6b --type q8_0 --vocab $B/qwen3-vocab.gguf --out /tmp/q06.gguf --threads 16 > /dev/null 2>&1
{ t gpu bench; timeout 100 $B/bin/gufo bench --model /tmp/q8b.gguf -p 512 -n 128 -r 3 --verbose
  t cpu bench; CUDA_VISIBLE_DEVICES= taskset -c 2,3 timeout 100 $B/bin/gufo bench --model /tmp/q06.gguf -p 512 -n 128 -r 3 --threads 2 --verbose; t done; } > $OUT/bench.txt 2>&1
{ CUDA_VISIBLE_DEVICES= timeout 60 $B/bin/gufo prompt --model /tmp/tiny-f32.gguf -n 16 --temperature 0 --verbose "Hello there"; echo rc=$?; } > $OUT/qwen35_prompt.txt 2>&1
echo "total $((SECONDS-S)) s" >> $OUT/bench.txt

#!/bin/sh
# gpu_device_stage.sh — stages what gpu_device_run.sh needs on the GPU machine, here.
#
#   sh extensions/qwen/tests/qwen35/gpu_device_stage.sh BUILD_DIR [DEST]
#
# Run from the repository root after building (with nvcc) at least: gufo,
# gufo_conformance, qwen_qwen35_gpu_tests, qwen_qwen35_random_model,
# qwen_random_model, qwen_gpu_tests and qwen_vocab (with the npm tokenizer
# package, so BUILD_DIR/gufo_extensions/qwen/qwen3-vocab*.gguf exist).
# DEST (default build-q35gpu-device, which .gitignore's /build-*/ ignores, so
# the device call can carry it) gets bin/ (each binary as NAME.real behind a
# wrapper that puts DEST/lib and the CUDA toolkit's libraries on the path),
# lib/ (the non-system shared libraries: gufo_ext_runtime, cJSON,
# libmicrohttpd, PCRE2 and theirs; the device has CUDA but not Debian's), the
# vocabularies, and source_dir (this checkout's path, which the conformance
# driver has compiled in). About 35 MB.
set -eu
B=${1:?usage: gpu_device_stage.sh BUILD_DIR [DEST]}
D=${2:-build-q35gpu-device}
rm -rf "$D" && mkdir -p "$D/bin" "$D/lib"
Q=$B/gufo_extensions/qwen
for x in "$B/host/gufo" "$B/gufo_conformance" "$Q/qwen_qwen35_gpu_tests" "$Q/qwen_qwen35_random_model" \
         "$Q/qwen_random_model" "$Q/qwen_gpu_tests"; do
  [ -x "$x" ] || { echo "gpu_device_stage: $x is not built" >&2; exit 1; }
  n=$(basename "$x")
  cp "$x" "$D/bin/$n.real"
  ldd "$x" | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libcublas|libcublasLt|libcudart)\.so/ {print $3}' \
    | xargs -r cp -L -t "$D/lib/"
  printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH="$d/../lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/%s.real" "$@"\n' \
    "$n" > "$D/bin/$n" && chmod +x "$D/bin/$n"
done
cp "$Q"/qwen3-vocab*.gguf "$D/" 2>/dev/null || echo "gpu_device_stage: no vocabulary in $Q (npm ci --prefix extensions/qwen/tests/reference, rebuild qwen_vocab): the 27B bench will be skipped" >&2
pwd > "$D/source_dir"
du -sh "$D"

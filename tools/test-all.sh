#!/usr/bin/env bash
# Runs every test Gufo has, the way CI does:
#   1. API ledger and boundary checks over the git history and the tree, and the host's rooms
#   2. a warnings-as-errors build and the whole CTest suite
#   3. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   4. short libFuzzer runs of every fuzz target over the committed seed corpora
#   5. with GUFO_TSAN=1 only (not in CI): a ThreadSanitizer build (-DGUFO_SANITIZE=thread,
#      build/ci-tsan) and the server tests under it (ctest -L server), where the threads are:
#      HTTP connections, the connection gate, the scheduler, the model's thread pool
# Each stage prints how long it took. Build trees go under build/ (ignored).
# Environment: GUFO_JOBS (parallel jobs, default nproc), GUFO_FUZZ_SECONDS
# (per target, default 60), GUFO_SKIP_ASAN=1 / GUFO_SKIP_FUZZ=1 for quick local runs,
# GUFO_TSAN=1 for stage 5 (TSAN_OPTIONS is passed on; a race makes the server exit 66
# and its test fail with the report).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${GUFO_JOBS:-$(nproc)}
fuzz_seconds=${GUFO_FUZZ_SECONDS:-60}
python=/usr/bin/python3
summary=()

stage() {  # stage NAME COMMAND...
    local name=$1; shift
    local start=$SECONDS
    echo "=== stage: $name"
    "$@"
    local took=$((SECONDS - start))
    summary+=("$(printf '%-28s %4ds' "$name" "$took")")
    echo "=== stage: $name done in ${took}s"
}

ledger() {
    "$python" sdk/tools/gufo_sdk.py check-api-records --repo "$root"
    "$python" sdk/tools/gufo_sdk.py check-boundaries --root "$root"
    "$python" tools/check_host_rooms.py --root "$root/host"
}

build_and_test() {  # build_and_test DIR CMAKE_ARGS...
    local dir=$1; shift
    cmake -S "$root" -B "$dir" -G Ninja -DGUFO_WERROR=ON "$@"
    cmake --build "$dir" -j "$jobs"
    ctest --test-dir "$dir" -j "$jobs" --output-on-failure --timeout 900
}

fuzz() {
    local dir=build/fuzz
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_C_COMPILER=clang -DGUFO_FUZZ=ON -DBUILD_TESTING=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$dir" -j "$jobs" --target gufo_fuzz_targets
    "$python" tests/fuzz/run_fuzzers.py --build "$dir" --seconds "$fuzz_seconds"
}

tsan() {
    local dir=build/ci-tsan
    cmake -S "$root" -B "$dir" -G Ninja -DGUFO_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DGUFO_SANITIZE=thread
    cmake --build "$dir" -j "$jobs"
    TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1}" \
        ctest --test-dir "$dir" -L server --output-on-failure --timeout 900  # one at a time: instrumented models are slow
}

stage "ledger + boundaries" ledger
stage "build + tests" build_and_test build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${GUFO_SKIP_ASAN:-0}" != 1 ]; then
    stage "asan+ubsan build + tests" build_and_test build/ci-asan -DCMAKE_BUILD_TYPE=Debug \
        -DGUFO_SANITIZE=address,undefined
fi
if [ "${GUFO_SKIP_FUZZ:-0}" != 1 ]; then
    stage "fuzz (${fuzz_seconds}s/target)" fuzz
fi
if [ "${GUFO_TSAN:-0}" = 1 ]; then
    stage "tsan build + server tests" tsan
fi

echo "=== timings"
printf '%s\n' "${summary[@]}"

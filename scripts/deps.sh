#!/usr/bin/env bash
# Installs what PushTrack needs to build, test and run, when it is missing.
# Safe to run again: it only calls apt-get when a package is absent.
set -euo pipefail

# haproxy: the accuracy tests run two collectors behind it, and `make run-cluster` (with the
# tests of it) puts it in front with TLS; openssl makes its development certificate.
# libssl-dev: libcrypto's SHA-256 (Sources/CLibCrypto). libjemalloc-dev: the server's malloc
# (Sources/CJemalloc). pgbouncer: the pooler tests.
packages=(pkg-config postgresql libpq-dev libmicrohttpd-dev zlib1g-dev libssl-dev libjemalloc-dev curl haproxy openssl pgbouncer)
if [[ "${1:-}" == "--bench" ]]; then
    # slowhttptest: loadtest/slowloris.sh.
    packages+=(wrk procps slowhttptest)
fi
if [[ "${1:-}" == "--dashboard" ]]; then
    # scripts/dashboard-screenshots.sh: a real browser, and a venv for websocket-client.
    packages+=(chromium fonts-noto-color-emoji python3-venv)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "deps: installing ${missing[*]}" >&2
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "deps: swift is not on PATH (Swift 6 toolchain required)" >&2; exit 1; }

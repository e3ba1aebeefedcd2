#!/usr/bin/env bash
# Fetches llama.cpp's prebuilt CPU build for the llama.cpp yardstick
# (tools/yardsticks/llama_cpp_generate.mjs): the npm packages node-llama-cpp
# and @node-llama-cpp/linux-x64, pinned by version and by the sha256 of their
# `npm pack` tarballs, installed (without install scripts, which would try to
# build llama.cpp) into a cache outside the source tree:
#   ${INFERNO_CACHE:-$HOME/.cache/inferno}/yardsticks/node-llama-cpp-3.21.1/node_modules/...
# Their own dependencies come from npm as the package pins them. Idempotent
# and quick when present.
# Usage: fetch_llama_cpp.sh [--require]
# Without --require, a failed fetch (no npm, no network, not linux-x64) is a
# warning and the tests and benchmarks that need it skip; with --require (CI)
# it is an error naming the package, and the script exits 1
# (tools/npm_pack_verified.sh).
set -uo pipefail

version=3.21.1
# package, sha256 of its `npm pack` tarball.
packages=(
  "node-llama-cpp@$version 7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f"
  "@node-llama-cpp/linux-x64@$version 4b5b65a8b2611d8af94349b02d815c0f424a30a0a19aef2be5db25ecfef6730f"
)
dir="${INFERNO_CACHE:-$HOME/.cache/inferno}/yardsticks/node-llama-cpp-$version"
stamp="$(printf '%s\n' "${packages[@]}" | sha256sum | cut -d' ' -f1)"

# shellcheck source=tools/npm_pack_verified.sh
source "$(dirname "$0")/../npm_pack_verified.sh"

fetch_setup fetch_llama_cpp "the llama.cpp yardstick will skip" "$@"

[ -f "$dir/.sha256" ] && [ "$(cat "$dir/.sha256")" = "$stamp" ] && exit 0
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  warn "node-llama-cpp@$version's pinned prebuilt build is for linux-x64, not $(uname -sm)"
  exit "$FETCH_STATUS"
fi
work="$(mktemp -d)" || { warn "mktemp failed, cannot fetch node-llama-cpp@$version"; exit "$FETCH_STATUS"; }
trap 'rm -rf "$work"' EXIT
tarballs=()
for entry in "${packages[@]}"; do
  package="${entry%% *}" sha256="${entry#* }"
  npm_pack_verified "$package" "$sha256" "$work" || exit "$FETCH_STATUS"
  tarballs+=("$NPM_TARBALL")
done
rm -rf "$dir" && mkdir -p "$dir" && echo '{"private": true}' >"$dir/package.json" || { warn "cannot create $dir for node-llama-cpp@$version"; exit "$FETCH_STATUS"; }
if ! npm install --prefix "$dir" --ignore-scripts --omit=optional --no-audit --no-fund --silent "${tarballs[@]}" >&2; then
  warn "npm install of node-llama-cpp@$version into $dir failed"
  rm -rf "$dir"
  exit "$FETCH_STATUS"
fi
echo "$stamp" >"$dir/.sha256"
echo "fetch_llama_cpp: node-llama-cpp $version -> $dir" >&2
exit 0

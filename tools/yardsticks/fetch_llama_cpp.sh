#!/usr/bin/env bash
# Fetches llama.cpp's prebuilt CPU build for the llama.cpp yardstick
# (tools/yardsticks/llama_cpp_generate.mjs): the npm packages node-llama-cpp
# and @node-llama-cpp/linux-x64, pinned by version and by the sha256 of their
# `npm pack` tarballs, installed (without install scripts, which would try to
# build llama.cpp) into a cache outside the source tree:
#   ${INFERNO_CACHE:-$HOME/.cache/inferno}/yardsticks/node-llama-cpp-3.21.1/node_modules/...
# Their own dependencies come from npm as the package pins them. Idempotent
# and quick when present. Never fails the install: without npm or network, or
# off linux-x64, it warns, and the tests and benchmarks that need it skip.
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

warn() { echo "fetch_llama_cpp: warning: $*; the llama.cpp yardstick will skip" >&2; }

[ -f "$dir/.sha256" ] && [ "$(cat "$dir/.sha256")" = "$stamp" ] && exit 0
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  warn "the pinned prebuilt build is for linux-x64, not $(uname -sm)"
  exit 0
fi
work="$(mktemp -d)" || { warn "mktemp failed"; exit 0; }
trap 'rm -rf "$work"' EXIT
tarballs=()
for entry in "${packages[@]}"; do
  package="${entry%% *}" sha256="${entry#* }"
  tarball="$(npm_pack_verified "$package" "$sha256" "$work")" || exit 0
  tarballs+=("$tarball")
done
rm -rf "$dir" && mkdir -p "$dir" && echo '{"private": true}' >"$dir/package.json" || { warn "cannot create $dir"; exit 0; }
if ! npm install --prefix "$dir" --ignore-scripts --omit=optional --no-audit --no-fund --silent "${tarballs[@]}" >&2; then
  warn "npm install into $dir failed"
  rm -rf "$dir"
  exit 0
fi
echo "$stamp" >"$dir/.sha256"
echo "fetch_llama_cpp: node-llama-cpp $version -> $dir" >&2
exit 0

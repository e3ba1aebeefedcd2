#!/usr/bin/env bash
# Fetches the official `openai` npm package (the OpenAI API's TypeScript/JS
# client; 5.x has no dependencies and runs on Debian 12's Node 18/20), pinned
# by version and the sha256 of its `npm pack` tarball, into a cache outside
# the source tree:
#   ${INFERNO_CACHE:-$HOME/.cache/inferno}/openai-client/node_modules/openai
# for tests/serve_openai_client_test. Idempotent and quick when present.
# Usage: fetch_openai_client.sh [--require]
# Without --require, a failed fetch (no npm, no network) is a warning and the
# test skips; with --require (CI) it is an error naming the package, and the
# script exits 1 (tools/npm_pack_verified.sh).
set -uo pipefail

package="openai@5.23.2"
sha256="a2aa74ff8be1a80a215af201a3d2228e999464d166c1eaec2c9ca313395fbef1"
dir="${INFERNO_CACHE:-$HOME/.cache/inferno}/openai-client"
target="$dir/node_modules/openai"

# shellcheck source=tools/npm_pack_verified.sh
source "$(dirname "$0")/npm_pack_verified.sh"
fetch_setup fetch_openai_client "serve_openai_client_test will skip" "$@"

[ -f "$dir/.sha256" ] && [ "$(cat "$dir/.sha256")" = "$sha256" ] && [ -f "$target/package.json" ] && exit 0
work="$(mktemp -d)" || { warn "mktemp failed, cannot fetch $package"; exit "$FETCH_STATUS"; }
trap 'rm -rf "$work"' EXIT
npm_pack_verified "$package" "$sha256" "$work" || exit "$FETCH_STATUS"
rm -rf "$dir" && mkdir -p "$target" &&
  tar -xzf "$NPM_TARBALL" -C "$target" --strip-components=1 &&
  echo "$sha256" >"$dir/.sha256" || { warn "extracting $package into $dir failed"; exit "$FETCH_STATUS"; }
echo "fetch_openai_client: $package -> $target" >&2

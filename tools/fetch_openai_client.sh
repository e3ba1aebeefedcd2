#!/usr/bin/env bash
# Fetches the official `openai` npm package (the OpenAI API's TypeScript/JS
# client; 5.x has no dependencies and runs on Debian 12's Node 18/20), pinned
# by version and the sha256 of its `npm pack` tarball, into a cache outside
# the source tree:
#   ${INFERNO_CACHE:-$HOME/.cache/inferno}/openai-client/node_modules/openai
# for tests/serve_openai_client_test. Idempotent and quick when present.
# Never fails the install: without npm or network it warns, and the test
# skips.
set -uo pipefail

package="openai@5.23.2"
sha256="a2aa74ff8be1a80a215af201a3d2228e999464d166c1eaec2c9ca313395fbef1"
dir="${INFERNO_CACHE:-$HOME/.cache/inferno}/openai-client"
target="$dir/node_modules/openai"

# shellcheck source=tools/npm_pack_verified.sh
source "$(dirname "$0")/npm_pack_verified.sh"

warn() { echo "fetch_openai_client: warning: $*; serve_openai_client_test will skip" >&2; }

[ -f "$dir/.sha256" ] && [ "$(cat "$dir/.sha256")" = "$sha256" ] && [ -f "$target/package.json" ] && exit 0
work="$(mktemp -d)" || { warn "mktemp failed"; exit 0; }
trap 'rm -rf "$work"' EXIT
tarball="$(npm_pack_verified "$package" "$sha256" "$work")" || exit 0
rm -rf "$dir" && mkdir -p "$target" &&
  tar -xzf "$tarball" -C "$target" --strip-components=1 &&
  echo "$sha256" >"$dir/.sha256" || { warn "extracting $package into $dir failed"; exit 0; }
echo "fetch_openai_client: $package -> $target" >&2

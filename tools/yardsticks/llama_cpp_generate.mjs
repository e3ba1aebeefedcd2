// llama.cpp's greedy generation on a GGUF file, through node-llama-cpp's
// prebuilt CPU build (fetched by tools/yardsticks/fetch_llama_cpp.sh): loads
// the model, evaluates the prompt ids, decodes greedily with T threads, and
// prints the generated ids on one line, then a line
//   prefill <prompt tokens> tokens <tok/s> tok/s, decode <n> tokens <tok/s> tok/s
// (prefill: the prompt's batch up to the first generated token; decode: each
// later token).
//
//   node llama_cpp_generate.mjs --package DIR --model FILE.gguf --prompt-ids "1 2 3"
//                               --max-new-tokens N --threads T [--kv-cache F32]
// DIR is the folder holding node_modules/node-llama-cpp. --kv-cache sets the
// type of the KV cache (llama.cpp's default F16; F32, as inferno keeps it,
// for comparing tokens) and then turns flash attention off.
import { pathToFileURL } from "node:url";
import path from "node:path";

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument '${argv[i]}'`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const required of ["package", "model", "prompt-ids", "max-new-tokens", "threads"]) {
    if (!(required in args)) throw new Error(`--${required} is required`);
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const prompt = args["prompt-ids"].trim().split(/\s+/).map(Number);
  const maxNew = Number(args["max-new-tokens"]);
  const threads = Number(args.threads);
  const entry = path.join(args.package, "node_modules", "node-llama-cpp", "dist", "index.js");
  const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: threads });
  const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0 });
  const kvCache = "kv-cache" in args ? {
    experimentalKvCacheKeyType: args["kv-cache"],
    experimentalKvCacheValueType: args["kv-cache"],
    flashAttention: false,
  } : {};
  const context = await model.createContext({
    contextSize: prompt.length + maxNew + 1,
    batchSize: Math.max(prompt.length, 1),
    threads: { ideal: threads, min: threads },
    ...kvCache,
  });
  const sequence = context.getSequence();
  const generated = [];
  const start = performance.now();
  let firstAt = start;
  for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
    generated.push(token);
    if (generated.length === 1) firstAt = performance.now();
    if (generated.length >= maxNew) break;
  }
  const end = performance.now();
  const prefillRate = prompt.length / ((firstAt - start) / 1000);
  const decodeRate = (generated.length - 1) / ((end - firstAt) / 1000);
  console.log(generated.join(" "));
  console.log(`prefill ${prompt.length} tokens ${prefillRate.toFixed(1)} tok/s, ` +
              `decode ${generated.length - 1} tokens ${decodeRate.toFixed(1)} tok/s`);
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((error) => {
  console.error(`llama_cpp_generate: ${error.message.split("\n")[0]}`);
  process.exit(1);
});

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
//   node llama_cpp_generate.mjs --package DIR --jobs FILE --threads T [--kv-cache F32]
// DIR is the folder holding node_modules/node-llama-cpp. --kv-cache sets the
// type of the KV cache (llama.cpp's default F16; F32, as inferno keeps it,
// for comparing tokens) and then turns flash attention off.
// --jobs runs several generations in one process: FILE holds one job a line,
// "MODEL<tab>PROMPT IDS<tab>MAX NEW TOKENS", and the output is one line of
// generated ids per job, in order (no rate lines). Each process start costs
// about 2.6 s of CPU (getLlama tests the prebuilt binary in a child process
// first), several times a toy model's generation.
import { pathToFileURL } from "node:url";
import path from "node:path";
import { readFileSync } from "node:fs";

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument '${argv[i]}'`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  const jobRequired = "jobs" in args ? [] : ["model", "prompt-ids", "max-new-tokens"];
  for (const required of ["package", "threads", ...jobRequired]) {
    if (!(required in args)) throw new Error(`--${required} is required`);
  }
  return args;
}

// Greedy ids of one job (prompt: ids, maxNew: count) on a loaded llama, and
// the prefill and decode rates.
async function generate(llama, args, modelPath, prompt, maxNew, threads) {
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
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
  await context.dispose();
  await model.dispose();
  return {
    generated,
    prefillRate: prompt.length / ((firstAt - start) / 1000),
    decodeRate: (generated.length - 1) / ((end - firstAt) / 1000),
  };
}

function promptIds(text) {
  return text.trim().split(/\s+/).map(Number);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const threads = Number(args.threads);
  const entry = path.join(args.package, "node_modules", "node-llama-cpp", "dist", "index.js");
  const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: threads });
  if ("jobs" in args) {
    const lines = readFileSync(args.jobs, "utf8").split("\n").filter((line) => line.trim() !== "");
    for (const [index, line] of lines.entries()) {
      const fields = line.split("\t");
      if (fields.length !== 3) throw new Error(`${args.jobs} line ${index + 1}: want MODEL<tab>PROMPT IDS<tab>MAX NEW`);
      const { generated } = await generate(llama, args, fields[0], promptIds(fields[1]), Number(fields[2]), threads);
      console.log(generated.join(" "));
    }
  } else {
    const prompt = promptIds(args["prompt-ids"]);
    const { generated, prefillRate, decodeRate } =
        await generate(llama, args, args.model, prompt, Number(args["max-new-tokens"]), threads);
    console.log(generated.join(" "));
    console.log(`prefill ${prompt.length} tokens ${prefillRate.toFixed(1)} tok/s, ` +
                `decode ${generated.length - 1} tokens ${decodeRate.toFixed(1)} tok/s`);
  }
  await llama.dispose();
}

main().catch((error) => {
  console.error(`llama_cpp_generate: ${error.message.split("\n")[0]}`);
  process.exit(1);
});

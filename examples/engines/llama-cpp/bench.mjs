// Times llama.cpp (node-llama-cpp 3.21.1) on the GPT-2-124M-shaped checkpoint: greedy, batch 1, a fixed 8-token
// prompt, 64 new tokens (no eos: every one of the 64 is generated), 1 warm-up + 5 timed runs, one thread
// (getLlama maxThreads 1 + context threads 1). Prints ONE JSON line with the medians. beam4_tok_s is null:
// node-llama-cpp / llama.cpp have no beam search.
// Usage: node bench.mjs [MODEL_DIR]   (default the checkout's models/gpt2-124m-shaped, or $REFDECODE_BENCH_MODEL)
import { readFileSync } from "node:fs";
import { greedyRow, llama, loadModel, VERSION } from "./engine.mjs";

// one prompt, length and checkpoint for every engine's bench: ../common/bench.json
const SPEC = JSON.parse(readFileSync(new URL("../common/bench.json", import.meta.url), "utf8"));
const modelDir = process.argv[2] ?? process.env.REFDECODE_BENCH_MODEL ?? new URL(`../../../${SPEC.model}`, import.meta.url).pathname;
const PROMPT = SPEC.prompt;
const NEW = SPEC.new_tokens;
await llama({ maxThreads: 1 });
const t0 = performance.now();
const loaded = await loadModel(modelDir, { threads: 1 });
const loadSeconds = (performance.now() - t0) / 1000;
const times = [];
for (let run = 0; run < 6; run++) {
  const start = performance.now();
  const out = await greedyRow(loaded, PROMPT, { maxNewTokens: NEW, eosIds: [] });
  const seconds = (performance.now() - start) / 1000;
  if (out.length !== NEW) throw new Error(`generated ${out.length} tokens, not ${NEW}`);
  if (run > 0) times.push(seconds);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
process.stderr.write(`[bench] load+convert ${loadSeconds.toFixed(1)} s; greedy runs ${times.map((t) => t.toFixed(3)).join(", ")} s\n`);
console.log(JSON.stringify({ engine: "llama.cpp (node-llama-cpp)", version: VERSION, greedy_tok_s: +(NEW / median).toFixed(2), beam4_tok_s: null, threads: 1, note: "no beam search in node-llama-cpp/llama.cpp" }));
process.exit(0);

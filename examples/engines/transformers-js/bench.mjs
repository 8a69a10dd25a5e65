// Time transformers.js 4.3.1 on the GPT-2-124M-shaped checkpoint: greedy and "beam-4", batch 1, a fixed 8-token
// prompt, 64 new tokens (max_new_tokens = min_new_tokens = 64: eos is masked, all 64 are generated), 1 warm-up + 5
// timed runs; prints ONE JSON line with the medians in tokens per second (64 / wall time of one generate()).
//
//     node examples/engines/transformers-js/bench.mjs [--model DIR]
//
// Single-threaded: onnxruntime-node session with intraOpNumThreads = interOpNumThreads = 1 (adapter.mjs).
// num_beams = 4 is passed as the adapter passes it; generate() ignores it (one row per prompt, the top-1 token:
// modeling_utils.js:1008-1018), so "beam4_tok_s" times greedy decoding: the JSON line says so in "note".
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { ENGINE, VERSION, converted, generate, modelFor } from "./adapter.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
// one prompt, length and checkpoint for every engine's bench: ../common/bench.json
const SPEC = JSON.parse(readFileSync(path.join(HERE, "..", "common", "bench.json"), "utf8"));
const PROMPT = SPEC.prompt;
const NEW = SPEC.new_tokens;

function defaultModel() {
  for (const cand of [path.join(HERE, "..", "..", "..", SPEC.model)]) {
    if (existsSync(path.join(cand, "model.safetensors"))) return path.resolve(cand);
  }
  throw new Error("no models/gpt2-124m-shaped: make it with tools/engines/make_gpt2_124m_shaped.py or pass --model");
}

const args = process.argv.slice(2);
const modelDir = args[0] === "--model" ? path.resolve(args[1]) : defaultModel();
const runs = 5;

let t0 = performance.now();
await converted(modelDir);
const convertS = (performance.now() - t0) / 1000;
t0 = performance.now();
const model = await modelFor(modelDir);
const loadS = (performance.now() - t0) / 1000;

async function oneRun(numBeams) {
  const start = performance.now();
  const rows = await generate(model, [PROMPT], [PROMPT.map(() => 1)], {
    max_new_tokens: NEW, min_new_tokens: NEW, num_beams: numBeams, eos_token_id: [50256], pad_token_id: 50256,
  });
  const elapsed = (performance.now() - start) / 1000;
  if (rows[0].length !== PROMPT.length + NEW) throw new Error(`generated ${rows[0].length - PROMPT.length} tokens`);
  return NEW / elapsed;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const result = { engine: ENGINE, version: VERSION };
for (const [name, beams] of [["greedy_tok_s", 1], ["beam4_tok_s", 4]]) {
  await oneRun(beams); // warm-up
  const speeds = [];
  for (let i = 0; i < runs; i++) speeds.push(await oneRun(beams));
  result[name] = Math.round(median(speeds) * 100) / 100;
}
Object.assign(result, {
  threads: 1,
  convert_s: Math.round(convertS * 10) / 10,
  load_s: Math.round(loadS * 100) / 100,
  note: "num_beams is ignored by generate() (no beam search in 4.3.1): beam4_tok_s times greedy decoding",
});
console.log(JSON.stringify(result));

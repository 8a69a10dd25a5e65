// llama.cpp through node-llama-cpp 3.21.1: model loading (with the GGUF conversion on first use) and one row's
// greedy decode, shared by adapter.mjs (the conformance client) and bench.mjs.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const VERSION = JSON.parse(fs.readFileSync(path.join(HERE, "node_modules/node-llama-cpp/package.json"), "utf8")).version;

let llamaPromise = null;
/** The Llama instance: CPU only, the prebuilt binary only (never a build or a download), logs to stderr. */
export function llama({ maxThreads } = {}) {
  llamaPromise ??= getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
    logger: (level, message) => process.stderr.write(`[llama.cpp ${level}] ${message}\n`),
    ...(maxThreads != null ? { maxThreads } : {}),
  });
  return llamaPromise;
}

function sha256File(file) {
  const hash = createHash("sha256");
  const fd = fs.openSync(file, "r");
  const buf = Buffer.alloc(1 << 20);
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) hash.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest("hex");
}

/** The float32 GGUF of a Hugging Face GPT-2 or Llama folder: cache/<name>-<sha256[:12]>/model.gguf, converted on first use. */
export function ggufFor(modelDir) {
  const weights = path.join(modelDir, "model.safetensors");
  const key = `${path.basename(path.resolve(modelDir))}-${sha256File(weights).slice(0, 12)}`;
  const out = path.join(HERE, "cache", key, "model.gguf");
  if (!fs.existsSync(out)) {
    const python = fs.readFileSync(path.join(HERE, "tools/convert-python"), "utf8").trim();
    const tmp = `${out}.tmp-${process.pid}`;
    const t0 = Date.now();
    execFileSync(python, [path.join(HERE, "convert.py"), modelDir, tmp], { stdio: ["ignore", 2, 2] });
    fs.renameSync(tmp, out);
    process.stderr.write(`[llama-cpp adapter] converted ${modelDir} -> ${out} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  return out;
}

const loaded = new Map();
/**
 * {model, context, sequence, nCtx} for a model folder, loaded once. KV cache float32, flash attention off, one
 * thread by default (deterministic, and on a shared 2-core machine llama.cpp's thread pool waits ~300 ms a token
 * for busy cores even on the 96-token models).
 */
export async function loadModel(modelDir, { threads = 1 } = {}) {
  const key = `${path.resolve(modelDir)}|${threads}`;
  if (!loaded.has(key)) {
    loaded.set(key, (async () => {
      const config = JSON.parse(fs.readFileSync(path.join(modelDir, "config.json"), "utf8"));
      const nCtx = config.n_ctx ?? config.n_positions ?? config.max_position_embeddings;   // GPT-2 / Llama
      const l = await llama();
      const model = await l.loadModel({ modelPath: ggufFor(modelDir), gpuLayers: 0 });
      const context = await model.createContext({
        contextSize: nCtx,
        sequences: 1,
        flashAttention: false,
        experimentalKvCacheKeyType: "F32",
        experimentalKvCacheValueType: "F32",
        threads,
      });
      return { model, context, sequence: context.getSequence(), nCtx };
    })());
  }
  return loaded.get(key);
}

/**
 * One prompt (no padding), greedy: node-llama-cpp's temperature 0 (llama.cpp's greedy sampler), repetition
 * penalty through `repeatPenalty` with the whole history as `punishTokens` (transformers penalises every id of the
 * row), stop on any of `eosIds` (the eos is kept) or after `maxNewTokens`. Returns the generated ids.
 */
export async function greedyRow(loadedModel, promptIds, { maxNewTokens, eosIds = [], repetitionPenalty = 1.0 }) {
  const { sequence } = loadedModel;
  await sequence.clearHistory();
  const history = promptIds.slice();
  const generated = [];
  if (maxNewTokens <= 0) return generated;
  const eos = new Set(eosIds);
  const options = { temperature: 0, yieldEogToken: true };
  if (repetitionPenalty !== 1.0) {
    options.repeatPenalty = { punishTokens: () => history, penalty: repetitionPenalty, maxPunishTokens: history.length + maxNewTokens };
  }
  for await (const token of sequence.evaluate(promptIds, options)) {
    generated.push(token);
    history.push(token);
    if (eos.has(token) || generated.length >= maxNewTokens) break;
  }
  return generated;
}

/**
 * One prompt (no padding), sampling with the case's draws: llama.cpp's own sampler chain (node-llama-cpp's
 * order: repetition penalty, top-k, top-p, min-p 0, temperature: AddonSampler.cpp:101-156) filters the
 * distribution; `evaluateWithMetadata(..., {probabilities: true})` exposes it (the softmax of the logits left after
 * the chain, AddonContext.cpp:245-287); the adapter draws from it with `uniform(step)` by the suite's rule
 * (probabilities in vocabulary order, cumulative sums in float64, the first index whose sum exceeds u * total)
 * and hands the drawn token back to llama.cpp (the generator's replacement token), so the KV cache follows the
 * draw. llama.cpp's own draw (its `dist` sampler, seeded) is discarded.
 */
export async function sampleRow(loadedModel, promptIds, { maxNewTokens, eosIds = [], repetitionPenalty = 1.0, temperature, topK, topP, uniform }) {
  const { sequence } = loadedModel;
  await sequence.clearHistory();
  const history = promptIds.slice();
  const generated = [];
  if (maxNewTokens <= 0) return generated;
  const eos = new Set(eosIds);
  const options = { temperature, topK, topP, minP: 0, seed: 0, yieldEogToken: true };
  if (repetitionPenalty !== 1.0) {
    options.repeatPenalty = { punishTokens: () => history, penalty: repetitionPenalty, maxPunishTokens: history.length + maxNewTokens };
  }
  const it = sequence.evaluateWithMetadata(promptIds, { probabilities: true }, options);
  try {
    let step = await it.next();
    while (!step.done) {
      const entries = [...step.value.probabilities.entries()].sort((a, b) => a[0] - b[0]);
      let total = 0;
      for (const [, p] of entries) total += p;
      const target = uniform(generated.length) * total;
      let cum = 0;
      let token = entries[entries.length - 1][0];
      for (const [t, p] of entries) {
        cum += p;
        if (cum > target) { token = t; break; }
      }
      generated.push(token);
      history.push(token);
      if (eos.has(token) || generated.length >= maxNewTokens) break;
      step = await it.next(token);
    }
  } finally {
    await it.return();
  }
  return generated;
}

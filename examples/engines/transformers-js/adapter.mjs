// transformers.js (@huggingface/transformers 4.3.1, onnxruntime-node 1.30.0) as a `refdecode conformance check`
// client (docs/conformance.md, "The protocol"). Started by ./run (node, after ./setup.sh).
//
// For each decode request:
// * the checkpoint is exported once by ../onnx-export/export.py (optimum 1.17.1, ONNX with past key values) into
//   cache/<model-name>-<sha256(model.safetensors)[:12]>/ (config.json + onnx/model.onnx: the layout
//   AutoModelForCausalLM.from_pretrained reads with dtype "fp32"), loaded with local files only, on the CPU,
//   intra/inter-op threads 1;
// * input_ids and attention_mask go in as given (transformers.js takes transformers' left padding and builds
//   position ids from the mask, modeling_utils.js decoder_forward / create_position_ids);
// * every generation option of the case goes to generate() as transformers' GenerationConfig would take it
//   (max_new_tokens, min_length, min_new_tokens, eos_token_id (the list), pad_token_id, repetition_penalty,
//   no_repeat_ngram_size, num_beams, length_penalty, early_stopping, num_return_sequences, do_sample=false). Options
//   the engine silently ignores (num_beams: its generate() loop takes the first token of the BeamSearchSampler and
//   breaks, "TODO: Support beam search") are passed anyway and the case shows the consequence;
// * the answer is generate()'s sequences tensor as it is (prompt + generated, one row per prompt).
// Unsupported: sampling (no way to give the engine the case's uniforms: it draws from Math.random), a
// non-default option the engine has no field for, and output fields it does not return (beam_indices, required by
// the gpt2_beam_* types). scores / sequences_scores are left out (generate() returns neither).
import { createHash } from "node:crypto";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { AutoModelForCausalLM, Tensor, env } from "@huggingface/transformers";

import { Unsupported, serve } from "../common/protocol.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXPORT = path.join(HERE, "..", "onnx-export");
export const ENGINE = "transformers.js";
export const VERSION = JSON.parse(
  readFileSync(path.join(HERE, "node_modules", "@huggingface", "transformers", "package.json"), "utf8"),
).version;

env.allowRemoteModels = false;
env.allowLocalModels = true;

// transformers 4.38.2's GenerationConfig defaults of the fields this adapter does not pass: another value is
// Unsupported (the engine has no field for it, or a field its generate() never reads).
const HF_DEFAULTS = {
  max_time: null, penalty_alpha: null, use_cache: true, typical_p: 1.0, epsilon_cutoff: 0.0, eta_cutoff: 0.0,
  encoder_repetition_penalty: 1.0, bad_words_ids: null, force_words_ids: null, renormalize_logits: false,
  constraints: null, forced_bos_token_id: null, forced_eos_token_id: null, remove_invalid_values: false,
  exponential_decay_length_penalty: null, suppress_tokens: null, begin_suppress_tokens: null,
  forced_decoder_ids: null, sequence_bias: null, guidance_scale: null, low_memory: null,
  encoder_no_repeat_ngram_size: 0, decoder_start_token_id: null, prompt_lookup_num_tokens: null,
  num_beam_groups: 1, diversity_penalty: 0.0, output_attentions: false, output_hidden_states: false,
  output_scores: false, output_logits: null, return_dict_in_generate: false, num_assistant_tokens: 5,
  num_assistant_tokens_schedule: "heuristic", cache_implementation: null, _from_model_config: false,
  bos_token_id: null, transformers_version: null,
};
const PASSED = [
  "max_length", "max_new_tokens", "min_length", "min_new_tokens", "early_stopping", "do_sample", "num_beams",
  "temperature", "top_k", "top_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
  "num_return_sequences", "pad_token_id", "eos_token_id",
];
const NEEDS_BEAM_INDICES = new Set([
  "gpt2_beam_search", "gpt2_group_beam_search", "gpt2_beam_sample", "beam_search", "beam_sample",
  "group_beam_search", "beam_search_ties", "constrained_beam_search",
]);

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

async function weightsKey(modelDir) {
  const hash = createHash("sha256");
  await new Promise((resolve, reject) => {
    createReadStream(path.join(modelDir, "model.safetensors"))
      .on("data", (d) => hash.update(d))
      .on("end", resolve)
      .on("error", reject);
  });
  return `${path.basename(modelDir)}-${hash.digest("hex").slice(0, 12)}`;
}

/** The exported model folder for modelDir (cache/<key>/), exported on first use. */
export async function converted(modelDir) {
  const out = path.join(HERE, "cache", await weightsKey(modelDir));
  if (!existsSync(path.join(out, "onnx", "model.onnx"))) {
    const python = path.join(EXPORT, "env", "bin", "python");
    if (!existsSync(python)) {
      const r = spawnSync("bash", [path.join(EXPORT, "setup.sh")], { stdio: ["ignore", 2, 2] });
      if (r.status !== 0) throw new Error("onnx-export/setup.sh failed");
    }
    const r = spawnSync(python, [path.join(EXPORT, "export.py"), modelDir, out], { stdio: ["ignore", 2, 2] });
    if (r.status !== 0) throw new Error(`ONNX export of ${modelDir} failed`);
  }
  return out;
}

const models = new Map();

export async function modelFor(modelDir) {
  const folder = await converted(modelDir);
  if (!models.has(folder)) {
    env.localModelPath = path.dirname(folder) + path.sep;
    const model = await AutoModelForCausalLM.from_pretrained(path.basename(folder), {
      dtype: "fp32",
      device: "cpu",
      local_files_only: true,
      session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
    });
    if (models.size > 8) models.clear();
    models.set(folder, model);
  }
  return models.get(folder);
}

function checkOptions(cfg) {
  for (const [name, value] of Object.entries(cfg)) {
    if (PASSED.includes(name)) continue;
    if (name === "generation_kwargs" && value && Object.keys(value).length === 0) continue;
    if (!(name in HF_DEFAULTS)) throw new Unsupported(`no option for ${name}`);
    if (!same(value, HF_DEFAULTS[name])) throw new Unsupported(`no option for ${name}=${JSON.stringify(value)}`);
  }
  if (cfg.do_sample) {
    throw new Unsupported("sampling: the engine draws from Math.random; it cannot be given the case's uniforms");
  }
}

export function tensor2d(rows) {
  const flat = BigInt64Array.from(rows.flat().map((v) => BigInt(v)));
  return new Tensor("int64", flat, [rows.length, rows[0].length]);
}

/** generate() with the case's options; returns the sequences as arrays of numbers. */
export async function generate(model, inputIds, attentionMask, cfg) {
  const options = {};
  for (const name of PASSED) {
    if (name in cfg && cfg[name] !== null && cfg[name] !== undefined) options[name] = cfg[name];
  }
  options.do_sample = false;
  const sequences = await model.generate({
    input_ids: tensor2d(inputIds),
    attention_mask: tensor2d(attentionMask),
    ...options,
  });
  return sequences.tolist().map((row) => row.map((v) => Number(v)));
}

async function answer(request) {
  const kind = request.type ?? "";
  const inp = request.input ?? {};
  if (!inp.config || !inp.model) throw new Unsupported(`${kind}: not a decode request`);
  if (NEEDS_BEAM_INDICES.has(kind)) throw new Unsupported(`${kind} requires beam_indices, which the engine does not return`);
  if ((inp.model.kind ?? "gpt2") !== "gpt2") throw new Unsupported(`model kind ${inp.model.kind}: only GPT-2 is exported`);
  if ("uniforms" in inp) throw new Unsupported("sampling: the engine cannot be given the case's uniforms");
  checkOptions(inp.config);
  const modelDir = path.resolve(process.cwd(), inp.model.path);
  const model = await modelFor(modelDir);
  const mask = inp.attention_mask ?? inp.input_ids.map((r) => r.map(() => 1));
  return { sequences: await generate(model, inp.input_ids, mask, inp.config) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await serve(answer);
}

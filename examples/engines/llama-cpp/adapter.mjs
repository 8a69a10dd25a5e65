// refdecode conformance client for llama.cpp through node-llama-cpp 3.21.1 (docs/conformance.md, "The protocol"), on
// GPT-2 and Llama checkpoints (Hugging Face folders, converted to GGUF on first use: convert.py).
//
// What node-llama-cpp can express, it is given; what it has no option for is answered Unsupported:
// - greedy (num_beams 1, do_sample false): LlamaContextSequence.evaluate with temperature 0 (llama.cpp's greedy
//   sampler), one prompt at a time without its left padding (llama.cpp has no attention mask for padding; each
//   row runs alone, positions from 0, as transformers' position ids cumsum(mask) - 1 give), stopped on the case's
//   eos ids (yieldEogToken, so the model's own end-of-generation token does not stop it by itself), the eos kept;
// - repetition_penalty: repeatPenalty.penalty with the row's whole history (prompt + generated) as punishTokens;
// - beam search (num_beams > 1): Unsupported (neither node-llama-cpp 3.21.1 nor llama.cpp has one; llama.cpp's
//   llama_beam_search was removed from its API);
// - sampling (num_beams 1): llama.cpp cannot be given the draws (a seed for its own RNG), but node-llama-cpp
//   exposes the distribution its sampler chain leaves (evaluateWithMetadata probabilities): the adapter draws
//   from that with the case's uniforms and feeds the token back (engine.mjs, sampleRow). temperature, top_k and
//   top_p go to llama.cpp's samplers in its own order (top-k, top-p, then temperature);
// - no_repeat_ngram_size > 0: Unsupported (llama.cpp has DRY, a different rule, and no n-gram ban);
// - min_length beyond the padded prompt, min_new_tokens > 0: Unsupported (no minimum-length option).
import { floats, serve, Unsupported } from "../common/protocol.mjs";
import { greedyRow, loadModel, sampleRow } from "./engine.mjs";

const DECODE_TYPES = new Set(["gpt2_greedy", "gpt2_beam_search", "gpt2_sample", "sample", "gpt2_beam_sample", "gpt2_group_beam_search", "gpt2_contrastive_search", "llama_sample"]);

function checkConfig(config, T) {
  const numBeams = config.num_beams ?? 1;
  if (numBeams > 1) throw new Unsupported("no beam search: node-llama-cpp 3.21.1 / llama.cpp have none (num_beams > 1)");
  if ((config.num_return_sequences ?? 1) !== 1 && !config.do_sample) throw new Unsupported("no option for num_return_sequences > 1 without beams or sampling");
  if ((config.no_repeat_ngram_size ?? 0) > 0) throw new Unsupported("no option for no_repeat_ngram_size (llama.cpp has DRY, not an n-gram ban)");
  if ((config.min_new_tokens ?? 0) > 0) throw new Unsupported("no option for min_new_tokens");
  if ((config.min_length ?? 0) > T) throw new Unsupported(`no option for min_length (${config.min_length} > prompt length ${T})`);
  if ((config.num_beam_groups ?? 1) > 1 || (config.diversity_penalty ?? 0) !== 0) throw new Unsupported("no group beam search");
  if (config.penalty_alpha != null && config.penalty_alpha > 0) throw new Unsupported("no contrastive search");
}

async function answer(request) {
  const { type, input } = request;
  const isDecode = DECODE_TYPES.has(type) || (type.startsWith("engines_") && input && input.model);
  if (!isDecode) throw new Unsupported(`llama.cpp exposes no ${type} step on its own`);
  // GPT-2 and Llama folders (convert.py: convert_hf_to_gguf.py's GPT2Model / LlamaModel)
  if (!["gpt2", "llama"].includes(input.model.kind)) throw new Unsupported(`no ${input.model.kind} model in llama.cpp`);
  if (type === "gpt2_beam_search" || type === "gpt2_group_beam_search" || type === "gpt2_beam_sample") {
    throw new Unsupported("no beam search (and no beam_indices)");
  }
  const config = floats(input.config);
  const ids = input.input_ids;
  const mask = input.attention_mask ?? ids.map((row) => row.map(() => 1));
  const T = ids[0].length;
  checkConfig(config, T);
  const eosIds = config.eos_token_id == null ? [] : [].concat(config.eos_token_id);
  const pad = config.pad_token_id ?? eosIds[0] ?? 0;
  const loaded = await loadModel(input.model.path);
  const uniforms = input.uniforms ? floats(input.uniforms) : null;
  if (config.do_sample && !uniforms) throw new Unsupported("sampling without the case's uniforms");
  // num_return_sequences > 1 (sampling only): each prompt is run that many times, as transformers expands it
  // (rows p0, p0, ..., p1, p1, ...); each run is one independent llama.cpp decode.
  const nrs = config.do_sample ? (config.num_return_sequences ?? 1) : 1;
  const rows = ids.flatMap((row, b) => Array.from({ length: nrs }, () => b));
  const N = rows.length;
  const generated = [];
  for (let r = 0; r < N; r++) {
    const b = rows[r];
    const prompt = ids[b].filter((_, j) => mask[b][j] === 1);
    if (prompt.length + config.max_new_tokens > loaded.nCtx) throw new Unsupported(`prompt + max_new_tokens exceed n_ctx ${loaded.nCtx}`);
    const options = { maxNewTokens: config.max_new_tokens, eosIds, repetitionPenalty: config.repetition_penalty ?? 1.0 };
    if (config.do_sample) {
      // transformers draws for every row at every step: row r's draw at step t is uniforms[t * N + r]
      generated.push(await sampleRow(loaded, prompt, {
        ...options,
        temperature: config.temperature ?? 1.0,
        topK: config.top_k ?? 0,
        topP: config.top_p ?? 1.0,
        uniform: (t) => {
          if (t * N + r >= uniforms.length) throw new Error(`uniforms exhausted at step ${t}`);
          return uniforms[t * N + r];
        },
      }));
    } else {
      generated.push(await greedyRow(loaded, prompt, options));
    }
  }
  const width = Math.max(...generated.map((g) => g.length));
  const sequences = rows.map((b, r) => [...ids[b], ...generated[r], ...Array(width - generated[r].length).fill(pad)]);
  return { sequences };
}

await serve(answer);
process.exit(0);

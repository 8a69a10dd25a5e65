// refdecode conformance client for llama.cpp through node-llama-cpp 3.21.1 (docs/conformance.md, "The protocol").
//
// What node-llama-cpp can express, it is given; what it has no option for is answered Unsupported:
// - greedy (num_beams 1, do_sample false): LlamaContextSequence.evaluate with temperature 0 (llama.cpp's greedy
//   sampler), one prompt at a time without its left padding (llama.cpp has no attention mask for padding; each
//   row runs alone, positions from 0, as transformers' position ids cumsum(mask) - 1 give), stopped on the case's
//   eos ids (yieldEogToken, so the model's own end-of-generation token does not stop it by itself), the eos kept;
// - repetition_penalty: repeatPenalty.penalty with the row's whole history (prompt + generated) as punishTokens;
// - beam search (num_beams > 1): Unsupported (neither node-llama-cpp 3.21.1 nor llama.cpp has one; llama.cpp's
//   llama_beam_search was removed from its API);
// - sampling: Unsupported (a seed for llama.cpp's own RNG, no way to give it the case's uniforms);
// - no_repeat_ngram_size > 0: Unsupported (llama.cpp has DRY, a different rule, and no n-gram ban);
// - min_length beyond the padded prompt, min_new_tokens > 0: Unsupported (no minimum-length option).
import { floats, serve, Unsupported } from "../common/protocol.mjs";
import { greedyRow, loadModel } from "./engine.mjs";

const DECODE_TYPES = new Set(["gpt2_greedy", "gpt2_beam_search", "gpt2_sample", "gpt2_beam_sample", "gpt2_group_beam_search", "gpt2_contrastive_search"]);

function checkConfig(config, T) {
  const numBeams = config.num_beams ?? 1;
  if (numBeams > 1) throw new Unsupported("no beam search: node-llama-cpp 3.21.1 / llama.cpp have none (num_beams > 1)");
  if (config.do_sample) throw new Unsupported("no way to give llama.cpp's sampler the case's uniforms (do_sample)");
  if ((config.num_return_sequences ?? 1) !== 1) throw new Unsupported("no option for num_return_sequences > 1 without beams or sampling");
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
  if (input.model.kind !== "gpt2") throw new Unsupported(`no ${input.model.kind} model in llama.cpp`);
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
  const generated = [];
  for (let b = 0; b < ids.length; b++) {
    const prompt = ids[b].filter((_, j) => mask[b][j] === 1);
    if (prompt.length + config.max_new_tokens > loaded.nCtx) throw new Unsupported(`prompt + max_new_tokens exceed n_ctx ${loaded.nCtx}`);
    generated.push(await greedyRow(loaded, prompt, {
      maxNewTokens: config.max_new_tokens,
      eosIds,
      repetitionPenalty: config.repetition_penalty ?? 1.0,
    }));
  }
  const width = Math.max(...generated.map((g) => g.length));
  const sequences = ids.map((row, b) => [...row, ...generated[b], ...Array(width - generated[b].length).fill(pad)]);
  return { sequences };
}

await serve(answer);
process.exit(0);

// llama.cpp (through node-llama-cpp) greedy with frequency / presence penalties and a logit bias, for
// penalty_check.py: reads a JSON list of {prompt, maxNewTokens, frequencyPenalty, presencePenalty, logitBias} on
// stdin, writes the generated ids of each as a JSON list on stdout. The penalties go to llama.cpp's penalties
// sampler (`repeatPenalty`, its multiplicative `penalty` at 1, off) with the prompt and the generated tokens as
// `punishTokens`, its last `window` (default 64, llama.cpp's `penalty_last_n`; node-llama-cpp widens
// `maxPunishTokens`, the sampler's ring buffer, to the tokens handed, LlamaContext.js:1798), as llama-server
// accepts the prompt into the chain; the bias is a `TokenBias` in logits (`{logit: b}`: llama.cpp's logit-bias
// sampler, which node-llama-cpp puts before the penalties, AddonSampler.cpp).
import { TokenBias } from "node-llama-cpp";
import { loadModel } from "./engine.mjs";

const jobs = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (d) => (text += d)).on("end", () => resolve(text));
}));
const loaded = await loadModel(process.argv[2]);
const out = [];
for (const job of jobs) {
  const { sequence, model } = loaded;
  await sequence.clearHistory();
  const history = job.prompt.slice();
  const generated = [];
  const options = { temperature: 0, yieldEogToken: true };
  if (job.frequencyPenalty || job.presencePenalty) {
    const window = job.window ?? 64;
    options.repeatPenalty = { punishTokens: () => history.slice(-window), penalty: 1, maxPunishTokens: window,
      frequencyPenalty: job.frequencyPenalty ?? 0, presencePenalty: job.presencePenalty ?? 0 };
  }
  if (job.logitBias) {
    const bias = new TokenBias(model.tokenizer);
    for (const [token, b] of Object.entries(job.logitBias)) bias.set(Number(token), { logit: b });
    options.tokenBias = bias;
  }
  for await (const token of sequence.evaluate(job.prompt, options)) {
    generated.push(token);
    history.push(token);
    if (generated.length >= job.maxNewTokens) break;
  }
  out.push(generated);
}
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);

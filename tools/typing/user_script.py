"""A short user script on refdecode's public API; `mypy --strict` must pass on it (py.typed ships the types)."""

from __future__ import annotations

import numpy as np

from refdecode import (
    GPT2,
    GenerationConfig,
    StoppingCriteriaList,
    TextStreamer,
    Tokenizer,
    compute_transition_scores,
    generate,
    set_seed,
)


def continue_text(prompt: str, model_dir: str = "models/tiny-shakespeare") -> list[str]:
    model = GPT2.from_pretrained(model_dir)
    tok = Tokenizer(model_dir)
    set_seed(0)
    inputs = tok([prompt], return_tensors="np")
    config = GenerationConfig(max_new_tokens=5, num_beams=2, num_return_sequences=2)
    out = generate(model, inputs["input_ids"], attention_mask=inputs["attention_mask"], generation_config=config,
                   return_dict_in_generate=True, output_scores=True, stopping_criteria=StoppingCriteriaList())
    scores: np.ndarray = compute_transition_scores(out.sequences, out.scores, out.beam_indices)
    assert scores.dtype == np.float32
    generate(model, inputs["input_ids"], max_new_tokens=3, streamer=TextStreamer(tok, skip_prompt=True))
    return tok.batch_decode(out.sequences, skip_special_tokens=True)


if __name__ == "__main__":
    print(continue_text("ROMEO:"))

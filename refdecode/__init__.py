r"""refdecode: how a language model turns logits into text, in NumPy, exact to transformers 4.38.2.

The pipeline, one folder per stage (``ls refdecode/`` reads as this table)::

    prompt ──text/──▶ input_ids (B, T) int64
           ──model/ (gpt2.py, kv_cache.py; fast/: the same, faster)──▶ logits (B, T, V) float32
           ──processors/ (built in order by pipeline.py)──▶ scores (B, V) float32
           ──decoding/ (greedy, sampling, beam/, contrastive, assisted; randomness.py)──▶ next tokens
           ──decoding/stopping_criteria.py──▶ done?
           ──generate.py → dispatch.py──▶ sequences (B*R, T_out) int64 (+ scores, beam indices)
             (text/streamers.py: the text as it is generated; generation_output.py: compute_transition_scores)

The request at the top goes one way, ``cli.py`` (the ``refdecode`` command) -> ``generate.py`` (merges the
config and works out the mode once, builds the lists) -> ``dispatch.py`` (``MODES``, the table of modes -> loops)
-> the loop; beside it ``generation_config.py`` (every knob), ``generation_rules.py`` (the checks at the door: each
field, the prompt, the lengths), ``pipeline.py`` (config -> processors, warpers, stopping criteria),
``generation_output.py`` (the outputs). The ground floor, imported by all: ``recorder.py`` (how a loop is
watched), ``validation.py`` (argument checks), ``numerics/`` (softmax, activations, and torch's CPU softmax, cumsum and sort order bit for
bit), ``text/files.py`` (the
file readers); ``model/stand_ins.py`` holds stand-in models for tests and docs. ``reference/`` is the tooling that checks other implementations (traces, ``diff``,
``explain``, the conformance suite); no stage imports it (only this ``__init__``, for ``TraceRecorder``, and
the CLI do).

The imports form layers, with no cycle (tests/test_layering.py checks them): the model imports neither
processors nor decoding; processors never import decoding; decoding never imports the reference
tooling; the decode loops are siblings that import ``decoding/loop.py``, never each other; only the
beam loops import the beam bookkeeping.

Shape letters used in every comment of the package:

=====  ==========================================================
B      batch size (prompts); with beams, rows are B*K, grouped per prompt
K      num_beams (beams per prompt); G num_beam_groups; R num_return_sequences
T      sequence length of the tokens passed in this call
S      cached length (tokens already in the KV cache); S_max its capacity
V      vocabulary size
L      n_layer, H n_head, D head dim (n_embd / n_head), E n_embd
=====  ==========================================================

All floating arrays are float32, all token arrays int64.

The docstrings cite the five source documents by short name (the 4.26 walkthrough, the top-p
article, the pipeline post, the neural-speed article, the sampling note): docs/references.md.
"""

__version__ = "0.1.0"

# 1  prompt -> tokens
from .text.tokenizer import BatchEncoding, Tokenizer

# 2  tokens -> logits
from .model.config import GPT2Config
from .model.kv_cache import KVCache
from .model.modeling import GPT2
from .model.llama_config import LlamaConfig
from .model.llama_modeling import Llama
from .model.auto import from_pretrained

# 3  logits -> processed scores
from .numerics import log_softmax, softmax
from .processors.logits_process import (
    HammingDiversityLogitsProcessor,
    LogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)
from .processors.logits_warp import (
    LogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    llama_top_p_probs,
    shifted_top_p_warp,
    temperature_warp,
    top_k_top_p_filtering,
    top_k_warp,
    top_p_warp,
)
from .processors.truncation_warpers import EpsilonLogitsWarper, EtaLogitsWarper, MinPLogitsWarper, TypicalLogitsWarper
from .processors.serving_penalties import (
    FrequencyPenaltyLogitsProcessor,
    LogitBiasLogitsProcessor,
    PresencePenaltyLogitsProcessor,
)
from .processors.bad_words_and_forcing import (
    BarkEosPrioritizerLogitsProcessor,
    ForcedBOSTokenLogitsProcessor,
    ForcedEOSTokenLogitsProcessor,
    NoBadWordsLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
    SequenceBiasLogitsProcessor,
    SuppressTokensAtBeginLogitsProcessor,
    ForceTokensLogitsProcessor,
    SuppressTokensLogitsProcessor,
)
from .processors.prompt_penalties import EncoderNoRepeatNGramLogitsProcessor, EncoderRepetitionPenaltyLogitsProcessor
from .processors.guidance import UnbatchedClassifierFreeGuidanceLogitsProcessor, guidance_mix
from .processors.exponential_decay import ExponentialDecayLengthPenalty
from .processors.score_cleanup import InfNanRemoveLogitsProcessor, LogitNormalization

# 4  scores -> next token(s)
from .decoding.randomness import multinomial, set_seed
from .decoding.greedy import greedy_search
from .decoding.sampling import sample
from .decoding.beam.beam_scorer import BeamHypotheses, BeamSearchScorer
from .decoding.beam.beam_search import beam_sample, beam_search
from .decoding.beam.group_beam_search import group_beam_search
from .decoding.candidate_generator import AssistedCandidateGenerator, PromptLookupCandidateGenerator
from .decoding.assisted_decoding import _speculative_sampling, assisted_decoding
from .decoding.beam.constraints import Constraint, ConstraintListState, DisjunctiveConstraint, PhrasalConstraint
from .decoding.beam.constrained_beam_scorer import ConstrainedBeamSearchScorer
from .decoding.beam.constrained_beam_search import constrained_beam_search
from .decoding.contrastive_search import contrastive_search

# 5  stopping
from .decoding.stopping_criteria import (
    EosTokenCriteria,
    StopStringCriteria,
    MaxLengthCriteria,
    MaxNewTokensCriteria,
    MaxTimeCriteria,
    StoppingCriteria,
    StoppingCriteriaList,
    validate_stopping_criteria,
)

# 6  output
from .generation_config import GenerationConfig
from .generation_output import (
    GenerateBeamDecoderOnlyOutput,
    GenerateDecoderOnlyOutput,
    ModelOutput,
    compute_transition_scores,
)
from .generate import generate
from .text.streamers import BaseStreamer, TextIteratorStreamer, TextStreamer

# tracing a decode (docs/traces.md): refdecode.reference.diff and refdecode.reference.explain read the traces
from .reference.trace import TraceRecorder

__all__ = [
    "Tokenizer", "GPT2Config", "KVCache", "GPT2", "LlamaConfig", "Llama", "from_pretrained", "softmax", "log_softmax",
    "LogitsProcessor", "LogitsProcessorList", "MinLengthLogitsProcessor", "MinNewTokensLengthLogitsProcessor",
    "RepetitionPenaltyLogitsProcessor", "NoRepeatNGramLogitsProcessor", "HammingDiversityLogitsProcessor",
    "LogitsWarper", "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper",
    "temperature_warp", "top_k_warp", "top_p_warp", "llama_top_p_probs", "shifted_top_p_warp", "top_k_top_p_filtering",
    "TypicalLogitsWarper", "EpsilonLogitsWarper", "EtaLogitsWarper", "MinPLogitsWarper",
    "FrequencyPenaltyLogitsProcessor", "PresencePenaltyLogitsProcessor", "LogitBiasLogitsProcessor",
    "SequenceBiasLogitsProcessor", "NoBadWordsLogitsProcessor", "PrefixConstrainedLogitsProcessor",
    "ForcedBOSTokenLogitsProcessor", "ForcedEOSTokenLogitsProcessor", "SuppressTokensLogitsProcessor",
    "SuppressTokensAtBeginLogitsProcessor", "ForceTokensLogitsProcessor", "BarkEosPrioritizerLogitsProcessor", "EncoderRepetitionPenaltyLogitsProcessor",
    "EncoderNoRepeatNGramLogitsProcessor", "UnbatchedClassifierFreeGuidanceLogitsProcessor", "guidance_mix",
    "ExponentialDecayLengthPenalty", "InfNanRemoveLogitsProcessor", "LogitNormalization",
    "multinomial", "greedy_search", "sample", "BeamHypotheses", "BeamSearchScorer", "beam_search", "beam_sample",
    "group_beam_search", "AssistedCandidateGenerator", "PromptLookupCandidateGenerator", "assisted_decoding",
    "_speculative_sampling",
    "Constraint", "ConstraintListState", "DisjunctiveConstraint", "PhrasalConstraint",
    "ConstrainedBeamSearchScorer", "constrained_beam_search", "contrastive_search",
    "StoppingCriteria", "StoppingCriteriaList", "StopStringCriteria", "EosTokenCriteria", "MaxLengthCriteria", "MaxNewTokensCriteria",
    "MaxTimeCriteria", "GenerationConfig", "GenerateDecoderOnlyOutput", "GenerateBeamDecoderOnlyOutput", "generate",
    # conveniences for code ported from transformers
    "BatchEncoding", "set_seed", "validate_stopping_criteria", "ModelOutput", "compute_transition_scores",
    "BaseStreamer", "TextStreamer", "TextIteratorStreamer",
    "TraceRecorder",
]

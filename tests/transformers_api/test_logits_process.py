"""transformers 4.38.2's tests/generation/test_logits_process.py scenarios, run against refdecode.

Each test is the scenario of the transformers test of the same name (same inputs, same checks), written
against the torch names of ``shim.py``; ``tools/transformers_api/run_against_4382.py`` runs this file
unchanged on transformers 4.38.2 and real torch. Left out, because they are not 4.38.2's: the "processor
should not change logits in-place" checks (4.39, PR #29680: 4.38.2's processors write into ``scores``,
refdecode's return a new array), ``device=`` arguments, ``MinPLogitsWarper`` and the watermarking processors.
"""

from __future__ import annotations

import unittest

from refdecode import (
    BarkEosPrioritizerLogitsProcessor,
    EncoderNoRepeatNGramLogitsProcessor,
    EncoderRepetitionPenaltyLogitsProcessor,
    EpsilonLogitsWarper,
    EtaLogitsWarper,
    ExponentialDecayLengthPenalty,
    ForcedBOSTokenLogitsProcessor,
    ForcedEOSTokenLogitsProcessor,
    HammingDiversityLogitsProcessor,
    InfNanRemoveLogitsProcessor,
    LogitNormalization,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    MinNewTokensLengthLogitsProcessor,
    NoBadWordsLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    SequenceBiasLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
    UnbatchedClassifierFreeGuidanceLogitsProcessor,
)
from transformers_api.shim import expand, ids_tensor, nn, torch, torch_device

INF = float("inf")


def ramp(vocab_size: int, batch_size: int):
    """Rows ``0 .. V-1`` shifted by ``-V // 2``, the second row scaled by 100 (the tests' extreme logits)."""
    logits = torch.arange(vocab_size, device=torch_device, dtype=torch.float).unsqueeze(0).repeat(batch_size, 1)
    logits = logits - (vocab_size // 2)
    logits[1] = logits[1] * 100.0
    return logits


def kept_per_row(scores):
    """How many entries of each row differ from the 0.0 filter value."""
    return (scores != 0.0).to(torch.long).sum(dim=-1).tolist()


class LogitsProcessorTest(unittest.TestCase):
    def _get_uniform_logits(self, batch_size: int, length: int):
        return torch.ones((batch_size, length), device=torch_device, dtype=torch.float) / length

    def test_min_length_dist_processor(self):
        processor = MinLengthLogitsProcessor(min_length=10, eos_token_id=0)

        short = processor(ids_tensor((4, 5), vocab_size=20), self._get_uniform_logits(4, 20))
        self.assertListEqual(short[:, 0].tolist(), 4 * [-INF])  # length 5 < 10: eos banned

        long = processor(ids_tensor((4, 15), vocab_size=20), self._get_uniform_logits(4, 20))
        self.assertFalse(torch.isinf(long).any())  # length 15: nothing banned

    @expand([(0,), ([0, 18],)])
    def test_new_min_length_dist_processor(self, eos_token_id):
        batch_size, vocab_size = 4, 20
        input_ids = ids_tensor((batch_size, 5), vocab_size=vocab_size)
        processor = MinNewTokensLengthLogitsProcessor(
            prompt_length_to_skip=input_ids.shape[-1], min_new_tokens=3, eos_token_id=eos_token_id
        )
        banned = batch_size * [-INF] * (len(eos_token_id) if isinstance(eos_token_id, list) else 1)

        def eos_scores(length):
            ids = input_ids if length == 5 else ids_tensor((batch_size, length), vocab_size=vocab_size)
            return processor(ids, self._get_uniform_logits(batch_size, vocab_size))

        self.assertListEqual(eos_scores(5)[:, eos_token_id].flatten().tolist(), banned)
        self.assertTrue(processor.prompt_length_to_skip == 5)
        for length in (2, 6, 7):  # 0, 1, 2 new tokens: fewer than 3, eos banned
            self.assertListEqual(eos_scores(length)[:, eos_token_id].flatten().tolist(), banned)
        for length in (8, 15):  # 3 and 10 new tokens: allowed
            self.assertFalse(torch.isinf(eos_scores(length)).any())

    def test_temperature_dist_warper(self):
        length = 20
        scores = self._get_uniform_logits(batch_size=2, length=length)
        scores[1, 5] = (1 / length) + 0.1  # a peak in the second row
        scores[1, 10] = (1 / length) - 0.4  # a valley in the second row
        probs = nn.functional.softmax(scores, dim=-1)

        sharp = nn.functional.softmax(TemperatureLogitsWarper(temperature=0.5)(None, scores.clone()), dim=-1)
        smooth = nn.functional.softmax(TemperatureLogitsWarper(temperature=1.3)(None, scores.clone()), dim=-1)

        # a uniform row stays uniform
        self.assertTrue(torch.allclose(probs[0, :], sharp[0, :], atol=1e-3))
        self.assertTrue(torch.allclose(probs[0, :], smooth[0, :], atol=1e-3))
        # t < 1: the peak rises, the valley sinks; t > 1: the opposite
        self.assertLess(probs[1, :].max(), sharp[1, :].max())
        self.assertGreater(probs[1, :].min(), sharp[1, :].min())
        self.assertGreater(probs[1, :].max(), smooth[1, :].max())
        self.assertLess(probs[1, :].min(), smooth[1, :].min())

    def _special_scores(self, vocab_size):
        scores = self._get_uniform_logits(batch_size=2, length=vocab_size)
        scores[0, 0] = -(1 / vocab_size)
        scores[1, 5] = 4 / vocab_size
        return scores

    def test_repetition_penalty_dist_process(self):
        input_ids = torch.tensor([[0, 1], [5, 0]], device=torch_device, dtype=torch.long)
        v = 10
        scores = RepetitionPenaltyLogitsProcessor(penalty=2.0)(input_ids, self._special_scores(v).clone())

        self.assertAlmostEqual(scores[0, 0].item(), -(1 / v) * 2)  # negative seen score: multiplied
        self.assertAlmostEqual(scores[0, 1].item(), (1 / v) / 2)  # positive seen score: divided
        self.assertAlmostEqual(scores[1, 0].item(), (1 / v) / 2)
        self.assertAlmostEqual(scores[1, 5].item(), (4 / v) / 2)

    def test_encoder_repetition_penalty_dist_process(self):
        input_ids = torch.tensor([[0, 1], [5, 0]], device=torch_device, dtype=torch.long)
        v = 10
        processor = EncoderRepetitionPenaltyLogitsProcessor(penalty=2.0, encoder_input_ids=input_ids)
        scores = processor(input_ids, self._special_scores(v).clone())

        # the penalty is inverted: tokens of the encoder input are pushed up
        self.assertAlmostEqual(scores[0, 0].item(), -(1 / v) / 2)
        self.assertAlmostEqual(scores[0, 1].item(), (1 / v) * 2)
        self.assertAlmostEqual(scores[1, 0].item(), (1 / v) * 2)
        self.assertAlmostEqual(scores[1, 5].item(), (4 / v) * 2)
        # tokens not in the encoder input are unchanged
        self.assertAlmostEqual(scores[0, 2].item(), (1 / v))
        self.assertAlmostEqual(scores[1, 2].item(), (1 / v))

    def test_top_k_dist_warper(self):
        vocab_size, batch_size = 10, 2
        ramp_logits = torch.arange(vocab_size, device=torch_device, dtype=torch.float).unsqueeze(0).repeat(batch_size, 1)
        ramp_logits[1:, : vocab_size // 2] = ramp_logits[1:, : vocab_size // 2] + vocab_size

        scores = TopKLogitsWarper(3)(None, ramp_logits)
        self.assertListEqual(torch.isinf(scores[0]).tolist(), 7 * [True] + 3 * [False])
        self.assertListEqual(torch.isinf(scores[1]).tolist(), 2 * [True] + 3 * [False] + 5 * [True])

        # min_tokens_to_keep overrides top_k
        safety = TopKLogitsWarper(top_k=1, filter_value=0.0, min_tokens_to_keep=3)
        uniform = safety(None, self._get_uniform_logits(batch_size=batch_size, length=5))
        self.assertListEqual((uniform == 0.0).to(torch.long).sum(dim=-1).tolist(), [0, 0])  # ties: all kept
        ramp5 = torch.arange(5, device=torch_device, dtype=torch.float).unsqueeze(0).repeat(batch_size, 1)
        self.assertListEqual((safety(None, ramp5) == 0.0).to(torch.long).sum(dim=-1).tolist(), [2, 2])

    def test_top_p_dist_warper(self):
        dist = torch.log(
            torch.tensor([[0.3, 0.1, 0.1, 0.5], [0.15, 0.3, 0.3, 0.25]], device=torch_device, dtype=torch.float)
        )
        filtered = torch.exp(TopPLogitsWarper(0.8)(None, dist))
        # the smallest set whose mass reaches 0.8 is kept
        expected = torch.tensor([[0.3, 0.0, 0.0, 0.5], [0.0, 0.3, 0.3, 0.25]], device=torch_device, dtype=torch.float)
        self.assertTrue(torch.allclose(filtered, expected, atol=1e-3))

        # extreme logits: the first row keeps 3, the second would keep 1 but min_tokens_to_keep=2 keeps 2
        warper = TopPLogitsWarper(0.9, min_tokens_to_keep=2, filter_value=0.0)
        self.assertListEqual(kept_per_row(warper(None, ramp(10, 2))), [3, 2])

    def test_typical_dist_warper(self):
        dist = torch.log(
            torch.tensor([[0.97, 0.01, 0.01, 0.01], [0.4, 0.2, 0.2, 0.2]], device=torch_device, dtype=torch.float)
        )
        filtered = torch.exp(TypicalLogitsWarper(0.5)(None, dist))
        expected = torch.tensor([[0.97, 0.0, 0.0, 0.0], [0.0, 0.2, 0.2, 0.2]], device=torch_device, dtype=torch.float)
        self.assertTrue(torch.allclose(filtered, expected, atol=1e-3))

        safety = TypicalLogitsWarper(mass=0.5, filter_value=0.0, min_tokens_to_keep=3)
        uniform = safety(None, self._get_uniform_logits(batch_size=2, length=5))
        self.assertListEqual((uniform == 0.0).to(torch.long).sum(dim=-1).tolist(), [0, 0])

        warper = TypicalLogitsWarper(0.7, min_tokens_to_keep=2, filter_value=0.0)
        self.assertListEqual(kept_per_row(warper(None, ramp(10, 2))), [2, 2])

    def test_epsilon_dist_warper(self):
        dist = torch.log(
            torch.tensor([[0.87, 0.099, 0.001, 0.03], [0.4, 0.299, 0.101, 0.2]], device=torch_device, dtype=torch.float)
        )
        filtered = torch.exp(EpsilonLogitsWarper(0.1)(None, dist))
        # only probabilities >= 0.1 survive
        expected = torch.tensor([[0.87, 0, 0, 0], [0.4, 0.299, 0.101, 0.2]], device=torch_device, dtype=torch.float)
        self.assertTrue(torch.allclose(filtered, expected, atol=1e-3))

        warper = EpsilonLogitsWarper(5e-2, min_tokens_to_keep=2, filter_value=0.0)
        self.assertListEqual(kept_per_row(warper(None, ramp(10, 2))), [3, 2])

    def test_eta_dist_warper(self):
        dist = torch.log(
            torch.tensor([[0.0, 0.1, 0.8, 0.1], [0.01, 0.04, 0.9, 0.05]], device=torch_device, dtype=torch.float)
        )
        filtered = torch.exp(EtaLogitsWarper(0.0625)(None, dist))
        # cutoff min(0.0625, sqrt(0.0625) * exp(-entropy)): 0.0625 for both rows here
        expected = torch.tensor([[0.0, 0.1, 0.8, 0.1], [0.0, 0.0, 0.9, 0.0]], device=torch_device, dtype=torch.float)
        self.assertTrue(torch.allclose(filtered, expected, atol=1e-3))

        warper = EtaLogitsWarper(0.1, min_tokens_to_keep=2, filter_value=0.0)
        self.assertListEqual(kept_per_row(warper(None, ramp(10, 2))), [2, 2])

    def test_no_repeat_ngram_dist_processor(self):
        input_ids = torch.tensor([[1, 1, 2, 1], [0, 1, 0, 1]], device=torch_device, dtype=torch.long)
        scores = self._get_uniform_logits(2, 3)

        two = NoRepeatNGramLogitsProcessor(2)(input_ids, scores.clone())
        three = NoRepeatNGramLogitsProcessor(3)(input_ids, scores.clone())

        # bigrams: after 1, row 0 has seen (1,1) and (1,2); row 1 has seen (1,0)
        self.assertListEqual(torch.isinf(two).tolist(), [[False, True, True], [True, False, False]])
        # trigrams: row 0 has no (2,1,x); row 1 has (0,1,0)
        self.assertListEqual(torch.isinf(three).tolist(), [[False, False, False], [True, False, False]])

    def test_encoder_no_repeat_ngram_dist_processor(self):
        # one prompt, two beams
        encoder_input_ids = torch.tensor([1, 2, 1, 1], device=torch_device, dtype=torch.long)
        input_ids = torch.tensor([[1, 2, 1], [8, 0, 2]], device=torch_device, dtype=torch.long)
        scores = self._get_uniform_logits(2, 3)

        two = EncoderNoRepeatNGramLogitsProcessor(2, encoder_input_ids=encoder_input_ids)(input_ids, scores.clone())
        three = EncoderNoRepeatNGramLogitsProcessor(3, encoder_input_ids=encoder_input_ids)(input_ids, scores.clone())
        self.assertListEqual(torch.isinf(two).tolist(), [[False, True, True], [False, True, False]])
        self.assertListEqual(torch.isinf(three).tolist(), [[False, True, False], [False, False, False]])

        # two prompts, two beams each
        encoder_input_ids = torch.tensor([[1, 2, 1, 1], [0, 0, 2, 1]], device=torch_device, dtype=torch.long)
        input_ids = torch.tensor([[1, 2, 1], [1, 0, 2], [0, 0, 0], [0, 2, 2]], device=torch_device, dtype=torch.long)
        scores = self._get_uniform_logits(4, 3)

        two = EncoderNoRepeatNGramLogitsProcessor(2, encoder_input_ids=encoder_input_ids)(input_ids, scores.clone())
        three = EncoderNoRepeatNGramLogitsProcessor(3, encoder_input_ids=encoder_input_ids)(input_ids, scores.clone())
        self.assertListEqual(
            torch.isinf(two).tolist(),
            [[False, True, True], [False, True, False], [True, False, True], [False, True, False]],
        )
        self.assertListEqual(
            torch.isinf(three).tolist(),
            [[False, True, False], [False, False, False], [False, False, True], [False, False, False]],
        )

    def test_no_bad_words_dist_processor(self):
        eos_token_id = 4
        input_ids = torch.tensor([[0, 1, 3, 1], [0, 1, 0, 1]], device=torch_device, dtype=torch.long)
        bad_word_tokens = [[1], [4], [1, 0], [0, 1, 2], [1, 3, 1, 3]]
        scores = self._get_uniform_logits(2, 5)

        processor = NoBadWordsLogitsProcessor(bad_words_ids=bad_word_tokens, eos_token_id=eos_token_id)
        filtered = processor(input_ids, scores.clone())
        # row 0 bans 0, 1, 3; row 1 bans 0, 1, 2; eos (4) is never banned
        self.assertListEqual(
            torch.isinf(filtered).tolist(), [[True, True, False, True, False], [True, True, True, False, False]]
        )

        # only [eos] as a bad word: accepted, changes nothing
        processor = NoBadWordsLogitsProcessor(bad_words_ids=[[4]], eos_token_id=eos_token_id)
        self.assertTrue(torch.allclose(scores, processor(input_ids, scores.clone()), atol=1e-3))

    def test_bias_dist_processor(self):
        input_ids = torch.tensor([[0, 1, 3, 1], [0, 1, 0, 1]], device=torch_device, dtype=torch.long)
        sequence_bias = {(1,): 100.0, (4,): 100.0, (1, 0): -100.0, (0, 1, 2): -100.0, (1, 3, 1, 3): -100.0}
        sequence_bias[(1, 3, 1, 3, 1, 3)] = -100.0  # the same ending twice (no effect on these rows)
        scores = torch.zeros((2, 5), dtype=torch.float, device=torch_device)

        filtered = SequenceBiasLogitsProcessor(sequence_bias=sequence_bias)(input_ids, scores.clone())
        self.assertListEqual(
            filtered.tolist(), [[-100.0, 100.0, 0.0, -100.0, 100.0], [-100.0, 100.0, -100.0, 0.0, 100.0]]
        )

    def test_processor_list(self):
        input_ids = ids_tensor((4, 10), 15)
        input_ids_comp = input_ids.clone()
        scores = self._get_uniform_logits(4, 15)
        scores_comp = scores.clone()

        processors = [
            MinLengthLogitsProcessor(min_length=10, eos_token_id=0),
            TemperatureLogitsWarper(temperature=0.5),
            RepetitionPenaltyLogitsProcessor(penalty=2.0),
            TopKLogitsWarper(3),
            TopPLogitsWarper(0.8),
            NoRepeatNGramLogitsProcessor(2),
            NoBadWordsLogitsProcessor(bad_words_ids=[[1]], eos_token_id=0),
        ]
        for processor in processors:  # one by one
            scores = processor(input_ids, scores)
        scores_comp = LogitsProcessorList(processors)(input_ids, scores_comp)  # as a list

        self.assertTrue(torch.allclose(scores, scores_comp, atol=1e-3))
        self.assertListEqual(input_ids.tolist(), input_ids_comp.tolist())  # input_ids untouched

    def test_prefix_constrained_logits_processor(self):
        input_ids = torch.tensor([[0, 1, 3, 1], [0, 1, 0, 1]], device=torch_device, dtype=torch.long)
        scores = self._get_uniform_logits(2, 5)

        def prefix_allowed_tokens_fn(batch_id, inputs_ids):
            return [[0, 1], [2, 3]][batch_id]

        filtered = PrefixConstrainedLogitsProcessor(prefix_allowed_tokens_fn, 1)(input_ids, scores.clone())
        self.assertListEqual(
            torch.isinf(filtered).tolist(), [[False, False, True, True, True], [True, True, False, False, True]]
        )

        def empty_prefix_allowed_tokens_fn(batch_id, inputs_ids):
            return []

        processor = PrefixConstrainedLogitsProcessor(empty_prefix_allowed_tokens_fn, 1)
        self.assertRaises(ValueError, processor, input_ids, scores.clone())

    def test_hamming_diversity(self):
        num_beams, num_beam_groups = 2, 2
        scores = self._get_uniform_logits(num_beams, 4)
        # group 0 of each prompt chose token 0 (prompt 0) and 1 (prompt 1); group 1 is penalised for them
        current_tokens = torch.tensor([0, 3, 1, 2], device=torch_device, dtype=torch.long)
        processor = HammingDiversityLogitsProcessor(
            diversity_penalty=1.0, num_beams=num_beams, num_beam_groups=num_beam_groups
        )

        processed = processor(None, scores, current_tokens, 1)
        self.assertTrue(torch.allclose(processed[0], torch.tensor([-0.7500, 0.2500, 0.2500, 0.2500]), atol=1e-3))
        self.assertTrue(torch.allclose(processed[1], torch.tensor([0.2500, -0.7500, 0.2500, 0.2500]), atol=1e-3))

    def test_forced_bos_token_logits_processor(self):
        processor = ForcedBOSTokenLogitsProcessor(bos_token_id=0)

        scores = processor(ids_tensor((4, 1), vocab_size=20), self._get_uniform_logits(4, 20))
        self.assertTrue(torch.isneginf(scores[:, 1:]).all())  # at length 1 only bos remains
        self.assertListEqual(scores[:, 0].tolist(), 4 * [0])

        scores = processor(ids_tensor((4, 4), vocab_size=20), self._get_uniform_logits(4, 20))
        self.assertFalse(torch.isinf(scores).any())  # later: nothing forced

    def test_forced_eos_token_logits_processor(self):
        processor = ForcedEOSTokenLogitsProcessor(max_length=5, eos_token_id=0)

        scores = processor(ids_tensor((4, 4), vocab_size=20), self._get_uniform_logits(4, 20))
        self.assertTrue(torch.isneginf(scores[:, 1:]).all())  # at max_length - 1 only eos remains
        self.assertListEqual(scores[:, 0].tolist(), 4 * [0])

        scores = processor(ids_tensor((4, 3), vocab_size=20), self._get_uniform_logits(4, 20))
        self.assertFalse(torch.isinf(scores).any())

    def test_remove_nan_inf_logits_processor(self):
        scores = torch.tensor([[0.0, 0.7, 0.8, float("nan")], [0.1, INF, 0.3, -INF]], device=torch_device)
        processed = InfNanRemoveLogitsProcessor()(ids_tensor((2, 4), vocab_size=20), scores.clone())
        # nan -> 0, +inf -> the largest float32, -inf -> the smallest (4.38.2)
        finfo = torch.finfo(processed.dtype)
        expected = torch.tensor([[0.0, 0.7, 0.8, 0.0], [0.1, finfo.max, 0.3, finfo.min]], device=torch_device)
        self.assertTrue(torch.allclose(processed, expected, atol=1e-6))

    def test_exponential_decay_length_penalty(self):
        batch_size, vocab_size, eos_token_id = 4, 20, 0
        input_ids = ids_tensor((batch_size, 2), vocab_size=vocab_size)
        processor = ExponentialDecayLengthPenalty(
            exponential_decay_length_penalty=(5, 1.1), eos_token_id=eos_token_id,
            input_ids_seq_length=input_ids.shape[-1],
        )

        scores = self._get_uniform_logits(batch_size, vocab_size)
        before = processor(input_ids, torch.clone(scores))  # before the start: unchanged
        self.assertListEqual(before[:, eos_token_id].tolist(), scores[:, eos_token_id].tolist())

        long_ids = ids_tensor((batch_size, 20), vocab_size=vocab_size)
        after = processor(long_ids, torch.clone(scores))  # after the start: eos raised
        self.assertTrue(torch.gt(after[:, eos_token_id], scores[:, eos_token_id]).all())

        negative = torch.neg(self._get_uniform_logits(batch_size, vocab_size))
        after = processor(long_ids, torch.clone(negative))  # negative eos scores are raised too
        self.assertTrue(torch.gt(after[:, eos_token_id], negative[:, eos_token_id]).all())

    def test_normalization(self):
        scores = torch.tensor(
            [[-23.18, -29.96, -43.54, 47.77], [-33.58, -26.87, -32.96, 22.51]], device=torch_device, dtype=torch.float
        )
        normalized = LogitNormalization()(None, scores.clone()).exp()

        ones = torch.ones(scores.shape[0], device=torch_device, dtype=torch.float)
        self.assertTrue(normalized.sum(dim=-1).allclose(ones))
        self.assertTrue(normalized.allclose(scores.softmax(dim=-1)))

    def test_classifier_free_guidance(self):
        class Namespace(dict):
            pass

        logits_uncond = torch.tensor([[[1.0, 0, 1.5]]])
        logits_cond = torch.tensor([[[1.0, 1.0, 1.0]]])

        def dummy_model(input_ids, attention_mask, use_cache=True, past_key_values=None):
            out = Namespace()
            out.logits = logits_uncond
            out.past_key_values = None
            return out

        def lsm(x):
            return torch.nn.functional.log_softmax(x, dim=-1)

        expected = (lsm(logits_uncond) + 1.5 * (lsm(logits_cond) - lsm(logits_uncond)))[0, -1]
        input_ids = torch.LongTensor([[0]])
        for extra in (  # explicit unconditional prompt and mask; explicit prompt; all implicit
            (input_ids, torch.ones_like(input_ids, dtype=torch.long)),
            (input_ids,),
            (),
        ):
            cfg = UnbatchedClassifierFreeGuidanceLogitsProcessor(1.5, dummy_model, *extra)
            out = cfg(torch.LongTensor([[0]]), logits_cond)[0, -1]
            for i in range(3):
                self.assertAlmostEqual(out[i].item(), expected[i].item())

    def test_early_stop_processor(self):
        eos_token_id, min_eos_p = 2, 0.1
        scores = self._get_uniform_logits(2, 4)
        scores[0][eos_token_id] = -6  # below log(min_eos_p): row 0 is left alone

        processor = BarkEosPrioritizerLogitsProcessor(eos_token_id=eos_token_id, min_eos_p=min_eos_p)
        actual = processor(None, scores.clone())
        # row 1: eos is likely enough, so everything but eos is removed
        expected = [scores[0].tolist(), [-INF, -INF, scores[0][0], -INF]]
        self.assertListEqual(actual.tolist(), expected)

    def test_early_stop_processor_multi_eos(self):
        eos_token_id, min_eos_p = [2, 3], 0.1
        scores = self._get_uniform_logits(2, 4)
        scores[0][eos_token_id] = -6

        processor = BarkEosPrioritizerLogitsProcessor(eos_token_id=eos_token_id, min_eos_p=min_eos_p)
        actual = processor(None, scores.clone())
        expected = [scores[0].tolist(), [-INF, -INF, scores[0][0], scores[0][0]]]
        self.assertListEqual(actual.tolist(), expected)

"""transformers 4.38.2's tests/generation/test_beam_search.py scenarios (BeamSearchTest, ConstrainedBeamSearchTest).

The scorers are driven by hand as generate's loops drive them: random ids, candidate tokens/indices and sorted
scores for ``2 * num_beams`` candidates per prompt; ``process`` picks the next beams and stores finished ones,
``finalize`` returns the best hypotheses. Same inputs and checks as the transformers tests of the same names;
``tools/transformers_api/run_against_4382.py`` runs this file on 4.38.2.
"""

from __future__ import annotations

import unittest

from refdecode import (
    BeamHypotheses,
    BeamSearchScorer,
    ConstrainedBeamSearchScorer,
    DisjunctiveConstraint,
    PhrasalConstraint,
)
from transformers_api.shim import floats_tensor, ids_tensor, torch, torch_device

BATCH_SIZE, SEQUENCE_LENGTH, VOCAB_SIZE, PAD_TOKEN_ID, NUM_BEAMS = 3, 10, 99, 0, 4
EOS_TOKEN_ID = VOCAB_SIZE + 1  # never drawn by ids_tensor


def prepare_inputs(all_vocab: bool = False):
    """input_ids (B*K, T); candidate tokens, beam indices and descending scores, (B, 2K) each."""
    input_ids = ids_tensor((BATCH_SIZE * NUM_BEAMS, SEQUENCE_LENGTH), VOCAB_SIZE)
    next_tokens = ids_tensor((BATCH_SIZE, 2 * NUM_BEAMS), VOCAB_SIZE).to(torch_device)
    next_indices = ids_tensor((BATCH_SIZE, 2 * NUM_BEAMS), NUM_BEAMS).to(torch_device)
    next_scores, _ = (-floats_tensor((BATCH_SIZE, 2 * NUM_BEAMS)).to(torch_device)).sort(descending=True)
    if not all_vocab:
        return input_ids, next_tokens, next_indices, next_scores
    scores_for_all_vocab, _ = (-floats_tensor((BATCH_SIZE * NUM_BEAMS, VOCAB_SIZE)).to(torch_device)).sort(
        descending=True
    )
    return input_ids, next_tokens, next_indices, next_scores, scores_for_all_vocab


def cut_expected_tensor(tensor):
    """Drop candidate 1 of every prompt (the eos one) and keep the next ``num_beams``: what process returns."""
    return torch.cat([tensor[:, :1], tensor[:, 2 : NUM_BEAMS + 1]], dim=1).flatten()


def contains(sequence, part) -> bool:
    """Whether one token list holds the other as a contiguous run."""
    # port: `.cpu().tolist()` in transformers' text (refdecode's outputs are NumPy arrays, already on the CPU)
    sequence = sequence if isinstance(sequence, list) else sequence.tolist()
    part = part if isinstance(part, list) else part.tolist()
    shorter, longer = (sequence, part) if len(sequence) <= len(part) else (part, sequence)
    return any(longer[i : i + len(shorter)] == shorter for i in range(len(longer) - len(shorter) + 1))


def check_beam_hypotheses(test, scorer_factory, input_ids):
    """BeamHypotheses as a scorer lays them out: one per prompt, early stopping, the worst kept score."""
    scorer = scorer_factory(do_early_stopping=True)
    beam_hyp = scorer._beam_hyps[0]
    test.assertEqual(len(scorer._beam_hyps), BATCH_SIZE)  # one BeamHypotheses per prompt
    test.assertTrue(isinstance(beam_hyp, BeamHypotheses))
    test.assertEqual(beam_hyp.num_beams, NUM_BEAMS)

    for beam_idx in range(NUM_BEAMS):
        beam_hyp.add(input_ids[beam_idx], -10.0)
    test.assertTrue(beam_hyp.is_done(-10.0, 5))  # early stopping: full means done, whatever the score

    scorer = scorer_factory(do_early_stopping=False)
    beam_hyp = scorer._beam_hyps[0]
    for beam_idx in range(NUM_BEAMS + 1):  # one more than fits: -10.0 is dropped
        beam_hyp.add(input_ids[beam_idx], -10.0 + float(beam_idx))
    test.assertAlmostEqual(beam_hyp.worst_score, -9.0 / (SEQUENCE_LENGTH**beam_hyp.length_penalty))
    test.assertFalse(beam_hyp.is_done(-5.0, SEQUENCE_LENGTH))  # -5 could still beat the worst
    test.assertTrue(beam_hyp.is_done(-20.0, SEQUENCE_LENGTH))  # -20 cannot


class BeamSearchTest(unittest.TestCase):
    def prepare_beam_scorer(self, **kwargs):
        return BeamSearchScorer(
            batch_size=kwargs.get("batch_size", BATCH_SIZE),
            num_beams=kwargs.get("num_beams", NUM_BEAMS),
            device=torch_device,
            length_penalty=kwargs.get("length_penalty", 2.0),
            do_early_stopping=kwargs.get("do_early_stopping", True),
            num_beam_hyps_to_keep=kwargs.get("num_beam_hyps_to_keep", 2),
        )

    def test_beam_hypotheses(self):
        input_ids, *_ = prepare_inputs()
        check_beam_hypotheses(self, self.prepare_beam_scorer, input_ids)

    def test_beam_scorer_update(self):
        input_ids, next_tokens, next_indices, next_scores = prepare_inputs()

        # every candidate of prompt 0 is eos: no beam can continue
        tokens = next_tokens.clone()
        tokens[0, :] = EOS_TOKEN_ID
        with self.assertRaises(ValueError):
            self.prepare_beam_scorer().process(input_ids, next_scores, tokens, next_indices, eos_token_id=EOS_TOKEN_ID)

        # the best num_beams candidates of every prompt are eos: every prompt is done
        scorer = self.prepare_beam_scorer()
        tokens = next_tokens.clone()
        tokens[:, :NUM_BEAMS] = EOS_TOKEN_ID
        beam_indices = torch.zeros_like(input_ids) + torch.arange(input_ids.shape[-1], device=input_ids.device)
        beam_indices = tuple(tuple(b) for b in beam_indices)
        scorer.process(input_ids, next_scores, tokens, next_indices, eos_token_id=EOS_TOKEN_ID, beam_indices=beam_indices)
        self.assertTrue(scorer.is_done)

        # candidate 1 of every prompt is eos: it is stored as a hypothesis, the others continue
        scorer = self.prepare_beam_scorer()
        tokens = next_tokens.clone()
        tokens[:, 1] = EOS_TOKEN_ID
        outputs = scorer.process(
            input_ids, next_scores, tokens, next_indices, eos_token_id=EOS_TOKEN_ID, beam_indices=beam_indices
        )
        expected_indices = cut_expected_tensor(next_indices) + (
            torch.arange(NUM_BEAMS * BATCH_SIZE, device=torch_device) // NUM_BEAMS
        ) * NUM_BEAMS  # beam index within the prompt -> row of input_ids
        self.assertListEqual(cut_expected_tensor(tokens).tolist(), outputs["next_beam_tokens"].tolist())
        self.assertListEqual(expected_indices.tolist(), outputs["next_beam_indices"].tolist())
        self.assertTrue(torch.allclose(cut_expected_tensor(next_scores), outputs["next_beam_scores"], atol=1e-3))

        for batch_idx in range(BATCH_SIZE):
            correct_idx = batch_idx * NUM_BEAMS + next_indices[batch_idx, 1]
            stored = scorer._beam_hyps[batch_idx].beams[0]  # (score, hypothesis, beam indices)
            self.assertListEqual(input_ids[correct_idx].tolist(), stored[1].tolist())
            self.assertListEqual(list(range(10)) + [correct_idx], torch.tensor(stored[2]).tolist())

    def test_beam_scorer_finalize(self):
        input_ids, next_tokens, next_indices, next_scores = prepare_inputs()
        max_length = SEQUENCE_LENGTH + 1  # one step: the eos appended by process must be in the output
        scorer = self.prepare_beam_scorer(num_beam_hyps_to_keep=1, length_penalty=1.0, do_early_stopping=False)

        tokens = next_tokens.clone()
        tokens[0, 0] = EOS_TOKEN_ID  # prompt 0's best candidate ends...
        next_scores[0, 0] = 0.0  # ...with the best possible score
        outputs = scorer.process(input_ids, next_scores, tokens, next_indices, eos_token_id=EOS_TOKEN_ID)
        output_scores = outputs["next_beam_scores"]
        output_tokens = outputs["next_beam_tokens"]
        output_indices = outputs["next_beam_indices"]
        # port: `output_tokens.unsqueeze(-1)` in transformers' text (refdecode returns a NumPy array)
        input_ids = torch.cat([input_ids[output_indices, :], output_tokens[:, None]], dim=-1)

        beam_indices = torch.zeros_like(input_ids) + torch.arange(input_ids.shape[-1], device=input_ids.device)
        beam_indices = tuple(tuple(b) for b in beam_indices)

        def finalize():
            return scorer.finalize(
                input_ids, output_scores, output_tokens, output_indices, pad_token_id=PAD_TOKEN_ID,
                eos_token_id=EOS_TOKEN_ID, max_length=max_length, beam_indices=beam_indices,
            )

        out = finalize()
        sequences, sequence_scores = out["sequences"], out["sequence_scores"]
        self.assertListEqual(list(sequences.shape), [BATCH_SIZE, max_length])  # one hypothesis per prompt
        self.assertListEqual(list(sequence_scores.shape), [BATCH_SIZE])
        self.assertFalse((sequence_scores > 0).any().item())  # log-probabilities
        self.assertEqual(sequences[0, -1].item(), EOS_TOKEN_ID)
        self.assertNotEqual(sequences[1, -1].item(), EOS_TOKEN_ID)
        self.assertNotEqual(sequences[2, -1].item(), EOS_TOKEN_ID)

        scorer.num_beam_hyps_to_keep = NUM_BEAMS  # now every beam is returned
        out = finalize()
        self.assertListEqual(list(out["sequences"].shape), [NUM_BEAMS * BATCH_SIZE, max_length])
        self.assertListEqual(list(out["sequence_scores"].shape), [NUM_BEAMS * BATCH_SIZE])


class ConstrainedBeamSearchTest(unittest.TestCase):
    def setUp(self):
        force_tokens = torch.randint(10, 50, (1, 2))[0].tolist()
        disjunctive_tokens = torch.randint(10, 50, (2, 2)).tolist()
        while disjunctive_tokens[0] == disjunctive_tokens[1]:  # equal branches are refused (a subset of the other)
            disjunctive_tokens = torch.randint(10, 50, (2, 2)).tolist()
        self.constraints = [PhrasalConstraint(force_tokens), DisjunctiveConstraint(disjunctive_tokens)]

    def prepare_constrained_beam_scorer(self, **kwargs):
        return ConstrainedBeamSearchScorer(
            constraints=kwargs.get("constraints", self.constraints),
            batch_size=kwargs.get("batch_size", BATCH_SIZE),
            num_beams=kwargs.get("num_beams", NUM_BEAMS),
            device=torch_device,
            length_penalty=kwargs.get("length_penalty", 2.0),
            do_early_stopping=kwargs.get("do_early_stopping", True),
            num_beam_hyps_to_keep=kwargs.get("num_beam_hyps_to_keep", 2),
        )

    def fulfil_constraints(self, input_ids):
        """Write every constraint's (first) token sequence at the start of every row."""
        stacked = []
        for constraint in self.constraints:
            token_ids = constraint.token_ids
            stacked = stacked + (token_ids[0] if isinstance(token_ids[0], list) else token_ids)
        fulfilling_sequence = torch.LongTensor(stacked)
        input_ids[:, : fulfilling_sequence.size(0)] = fulfilling_sequence

    def test_constrained_beam_hypotheses(self):
        input_ids, *_ = prepare_inputs(all_vocab=True)
        check_beam_hypotheses(self, self.prepare_constrained_beam_scorer, input_ids)

    def test_constrained_beam_scorer_update(self):
        input_ids, next_tokens, next_indices, next_scores, scores_for_all_vocab = prepare_inputs(all_vocab=True)
        self.fulfil_constraints(input_ids)

        tokens = next_tokens.clone()
        tokens[0, :] = EOS_TOKEN_ID
        with self.assertRaises(ValueError):
            self.prepare_constrained_beam_scorer().process(
                input_ids, next_scores, tokens, next_indices, scores_for_all_vocab, eos_token_id=EOS_TOKEN_ID
            )

        scorer = self.prepare_constrained_beam_scorer()
        tokens = next_tokens.clone()
        tokens[:, :NUM_BEAMS] = EOS_TOKEN_ID
        scorer.process(input_ids, next_scores, tokens, next_indices, scores_for_all_vocab, eos_token_id=EOS_TOKEN_ID)
        self.assertTrue(scorer.is_done)

        scorer = self.prepare_constrained_beam_scorer()
        tokens = next_tokens.clone()
        tokens[:, 1] = EOS_TOKEN_ID
        outputs = scorer.process(
            input_ids, next_scores, tokens, next_indices, scores_for_all_vocab, eos_token_id=EOS_TOKEN_ID
        )
        expected_indices = cut_expected_tensor(next_indices) + (
            torch.arange(NUM_BEAMS * BATCH_SIZE, device=torch_device) // NUM_BEAMS
        ) * NUM_BEAMS
        self.assertListEqual(cut_expected_tensor(tokens).tolist(), outputs["next_beam_tokens"].tolist())
        self.assertListEqual(expected_indices.tolist(), outputs["next_beam_indices"].tolist())
        self.assertTrue(torch.allclose(cut_expected_tensor(next_scores), outputs["next_beam_scores"], atol=1e-3))
        for batch_idx in range(BATCH_SIZE):
            correct_idx = batch_idx * NUM_BEAMS + next_indices[batch_idx, 1]
            self.assertListEqual(input_ids[correct_idx].tolist(), scorer._beam_hyps[batch_idx].beams[0][1].tolist())

    def test_constrained_beam_scorer_finalize(self):
        input_ids, next_tokens, next_indices, next_scores, scores_for_all_vocab = prepare_inputs(all_vocab=True)
        max_length = SEQUENCE_LENGTH + 1
        self.fulfil_constraints(input_ids)  # finalize needs hypotheses that fulfil the constraints
        scorer = self.prepare_constrained_beam_scorer(num_beam_hyps_to_keep=1, length_penalty=1.0,
                                                      do_early_stopping=False)
        constraints = scorer.constraints

        tokens = next_tokens.clone()
        tokens[0, 0] = EOS_TOKEN_ID
        next_scores[0, 0] = 0.0
        outputs = scorer.process(
            input_ids, next_scores, tokens, next_indices, scores_for_all_vocab, eos_token_id=EOS_TOKEN_ID
        )
        output_scores = outputs["next_beam_scores"]
        output_tokens = outputs["next_beam_tokens"]
        output_indices = outputs["next_beam_indices"]
        # port: `output_tokens.unsqueeze(-1)` in transformers' text (refdecode returns a NumPy array)
        input_ids = torch.cat([input_ids[output_indices, :], output_tokens[:, None]], dim=-1)

        out = scorer.finalize(
            input_ids, output_scores, output_tokens, output_indices, pad_token_id=PAD_TOKEN_ID,
            eos_token_id=EOS_TOKEN_ID, max_length=max_length,
        )
        sequences, sequence_scores = out["sequences"], out["sequence_scores"]
        self.assertListEqual(list(sequences.shape), [BATCH_SIZE, max_length])
        self.assertListEqual(list(sequence_scores.shape), [BATCH_SIZE])
        self.assertFalse((sequence_scores > 0).any().item())
        self.assertEqual(sequences[0, -1].item(), EOS_TOKEN_ID)
        self.assertNotEqual(sequences[1, -1].item(), EOS_TOKEN_ID)
        self.assertNotEqual(sequences[2, -1].item(), EOS_TOKEN_ID)

        for output in sequences:  # every returned sequence fulfils every constraint
            for constraint in constraints:
                forced = constraint.token_ids
                if isinstance(forced[0], list):
                    self.assertTrue(any(contains(output, branch) for branch in forced))
                else:
                    self.assertTrue(contains(output, forced))

        scorer = self.prepare_constrained_beam_scorer(num_beam_hyps_to_keep=NUM_BEAMS, length_penalty=1.0,
                                                      do_early_stopping=False)
        out = scorer.finalize(
            input_ids, output_scores, output_tokens, output_indices, pad_token_id=PAD_TOKEN_ID,
            eos_token_id=EOS_TOKEN_ID, max_length=max_length,
        )
        self.assertListEqual(list(out["sequences"].shape), [NUM_BEAMS * BATCH_SIZE, max_length])
        self.assertListEqual(list(out["sequence_scores"].shape), [NUM_BEAMS * BATCH_SIZE])

"""transformers 4.38.2's tests/generation/test_beam_constraints.py scenarios: DisjunctiveConstraint's input
checks and how it advances, token by token, through its branches (same inputs and checks as the transformers
tests of the same names; tools/transformers_api/run_against_4382.py runs this file on 4.38.2)."""

from __future__ import annotations

import unittest

from refdecode import DisjunctiveConstraint
from transformers_api.shim import torch


class ConstraintTest(unittest.TestCase):
    def step(self, dc, token, expected_seq, done=False):
        """Feed one token; the constraint's progress and completion must follow."""
        result = dc.update(token)
        self.assertEqual(dc.completed, done)
        self.assertTrue(dc.current_seq == expected_seq)
        return result

    def test_input_types(self):
        # token ids are lists of ints, and only lists of ints are accepted
        dc = DisjunctiveConstraint([[1, 2, 4], [1, 2, 3, 4]])
        self.assertTrue(isinstance(dc.token_ids, list))
        with self.assertRaises(ValueError):
            DisjunctiveConstraint(torch.LongTensor([[1, 2, 4], [1, 2, 3]]))
        with self.assertRaises(ValueError):
            DisjunctiveConstraint([torch.LongTensor([1, 2, 4]), torch.LongTensor([1, 2, 3, 4, 5])])

    def test_check_illegal_input(self):
        # a branch that is a prefix of another would be fulfilled halfway along the longer one: refused
        with self.assertRaises(ValueError):
            DisjunctiveConstraint([[1, 2], [1, 2, 3, 4]])

    def test_example_progression(self):
        dc = DisjunctiveConstraint([[1, 2, 3], [1, 2, 4]])
        self.assertEqual(self.step(dc, 1, [1]), (True, False, False))  # (stepped, completed, reset)
        self.assertEqual(self.step(dc, 2, [1, 2]), (True, False, False))
        self.assertEqual(self.step(dc, 3, [1, 2, 3], done=True), (True, True, False))

    def test_example_progression_unequal_three_mid_and_reset(self):
        dc = DisjunctiveConstraint([[1, 2, 3], [1, 2, 4, 5], [1, 2, 5]])
        self.step(dc, 1, [1])
        self.step(dc, 2, [1, 2])
        self.step(dc, 4, [1, 2, 4])
        self.step(dc, 5, [1, 2, 4, 5], done=True)

        dc.reset()
        self.step(dc, 1, [1])
        # remaining(): the longest branch's length minus the tokens matched so far (0 once completed)
        self.assertTrue(dc.remaining() == 3)
        self.step(dc, 2, [1, 2])
        self.assertTrue(dc.remaining() == 2)
        self.step(dc, 5, [1, 2, 5], done=True)
        self.assertTrue(dc.remaining() == 0)

"""transformers 4.38.2's tests/generation/test_stopping_criteria.py scenarios: the length and time criteria, a
list of them, and validate_stopping_criteria (same inputs and checks as the transformers tests of the same names;
tools/transformers_api/run_against_4382.py runs this file on 4.38.2). Left out: EosTokenCriteria and
StopStringCriteria, which transformers added after 4.38.2 (4.39, 4.40)."""

from __future__ import annotations

import time
import unittest

from refdecode import (
    MaxLengthCriteria,
    MaxNewTokensCriteria,
    MaxTimeCriteria,
    StoppingCriteriaList,
    validate_stopping_criteria,
)
from transformers_api.shim import ids_tensor, torch, torch_device


class StoppingCriteriaTestCase(unittest.TestCase):
    def _get_tensors(self, length):
        batch_size, vocab_size = 3, 250
        input_ids = ids_tensor((batch_size, length), vocab_size)
        scores = torch.ones((batch_size, length), device=torch_device, dtype=torch.float) / length
        return input_ids, scores

    def assert_stops_from_length_10(self, criteria):
        """Not at lengths 5 and 9, yes at 10."""
        self.assertFalse(criteria(*self._get_tensors(5)))
        self.assertFalse(criteria(*self._get_tensors(9)))
        self.assertTrue(criteria(*self._get_tensors(10)))

    def test_list_criteria(self):
        self.assert_stops_from_length_10(
            StoppingCriteriaList([MaxLengthCriteria(max_length=10), MaxTimeCriteria(max_time=0.1)])
        )

    def test_max_length_criteria(self):
        self.assert_stops_from_length_10(MaxLengthCriteria(max_length=10))

    def test_max_new_tokens_criteria(self):
        criteria = MaxNewTokensCriteria(start_length=5, max_new_tokens=5)
        self.assert_stops_from_length_10(criteria)
        self.assertEqual(StoppingCriteriaList([criteria]).max_length, 10)  # start_length + max_new_tokens

    def test_max_time_criteria(self):
        input_ids, scores = self._get_tensors(5)
        self.assertFalse(MaxTimeCriteria(max_time=0.1)(input_ids, scores))
        self.assertTrue(MaxTimeCriteria(max_time=0.1, initial_timestamp=time.time() - 0.2)(input_ids, scores))

    def test_validate_stopping_criteria(self):
        validate_stopping_criteria(StoppingCriteriaList([MaxLengthCriteria(10)]), 10)  # agrees: silent

        with self.assertWarns(UserWarning):  # disagrees with max_length: warns
            validate_stopping_criteria(StoppingCriteriaList([MaxLengthCriteria(10)]), 11)

        stopping_criteria = validate_stopping_criteria(StoppingCriteriaList(), 11)  # none: max_length added
        self.assertEqual(len(stopping_criteria), 1)

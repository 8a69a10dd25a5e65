"""refdecode.decoding.candidate_generator: prompt lookup finds the first earlier match of the longest n-gram; the assistant's draft length follows its schedule."""

from __future__ import annotations

import numpy as np
import pytest
from refdecode.decoding.candidate_generator import PromptLookupCandidateGenerator, prompt_lookup


def test_prompt_lookup_takes_the_first_earlier_match_of_the_longest_ngram():
    ids = np.array([1, 2, 9, 8, 2, 7, 6, 1, 2])
    # bigram (1, 2) occurs at 0 -> what followed it: 9, 8, 2 (not the unigram 2's later continuation)
    assert prompt_lookup(ids, 3, 2).tolist() == [9, 8, 2]
    # with unigrams only, the first earlier 2 (position 1) is followed by 9, 8, ...
    assert prompt_lookup(ids, 2, 1).tolist() == [9, 8]
    # candidates stop at the end of the sequence
    assert prompt_lookup(np.array([3, 4, 3]), 5, 2).tolist() == [4, 3]
    # no match at all: one dummy candidate, token 0 (4.38.2)
    assert prompt_lookup(np.array([5, 6, 7]), 4, 2).tolist() == [0]
    assert prompt_lookup(np.array([5]), 4, 2).tolist() == [0]


def test_prompt_lookup_generator_checks_its_arguments():
    with pytest.raises(ValueError, match="`num_output_tokens` has to be an integer >= 1, but is 0"):
        PromptLookupCandidateGenerator(0)
    with pytest.raises(ValueError, match="`max_matching_ngram_size` has to be an integer >= 1, but is 1.5"):
        PromptLookupCandidateGenerator(3, 1.5)

"""transformers 4.38.2's tests/generation/test_utils.py, class UtilsFunctionsTest: ``top_k_top_p_filtering``
(deprecated in 4.38.2, which warns, as refdecode does) and ``_speculative_sampling`` with 4.38.2's arguments (same
inputs and checks as the transformers tests of the same names; tools/transformers_api/run_against_4382.py runs
this file on 4.38.2). The file's other classes test whole models (GenerationTesterMixin, the hub integration
tests) and are not ported here."""

from __future__ import annotations

import unittest
import warnings

from refdecode import _speculative_sampling, top_k_top_p_filtering
from transformers_api.shim import torch, torch_device

INF = float("inf")


class UtilsFunctionsTest(unittest.TestCase):
    def test_top_k_top_p_filtering(self):
        # two rows of 30 logits; per row, the 4 largest hold <= 0.6 of the mass
        logits = torch.tensor(
            [
                [8.2220991, -0.5620044, 5.23229752, 4.0386393, -6.8798378, -0.54785802, -3.2012153, 2.92777176,
                 1.88171953, 7.35341276, 8.43207833, -9.85711836, -5.96209236, -1.13039161, -7.1115294, -0.8369633,
                 -5.3186408, 7.06427407, 0.81369344, -0.82023817, -5.9179796, 0.58813443, -6.99778438, 4.71551189,
                 -0.18771637, 7.44020759, 9.38450987, 2.12662941, -9.32562038, 2.35652522],
                [0.58425518, 4.53139238, -5.57510464, -6.28030699, -7.19529503, -4.02122551, 1.39337037, -6.06707057,
                 1.59480517, -9.643119, 0.03907799, 0.67231762, -8.88206726, 6.27115922, 2.28520723, 4.82767506,
                 4.30421368, 8.8275313, 5.44029958, -4.4735794, 7.38579536, -2.91051663, 2.61946077, -2.5674762,
                 -9.48959302, -4.02922645, -1.35416918, 9.67702323, -5.89478553, 1.85370467],
            ],
            dtype=torch.float,
            device=torch_device,
        )
        # the survivors: (row, column) and value
        non_inf_expected_idx = torch.tensor(
            [[0, 0], [0, 10], [0, 25], [0, 26], [1, 13], [1, 17], [1, 20], [1, 27]], dtype=torch.long, device=torch_device
        )
        non_inf_expected_output = torch.tensor(
            [8.2221, 8.4321, 7.4402, 9.3845, 6.2712, 8.8275, 7.3858, 9.6770], dtype=torch.float, device=torch_device
        )

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # scheduled for deletion in 4.39, as 4.38.2 says
            output = top_k_top_p_filtering(logits, top_k=10, top_p=0.6, min_tokens_to_keep=4)
        non_inf_output = output[output != -INF].to(device=torch_device)
        non_inf_idx = (output != -INF).nonzero().to(device=torch_device)

        self.assertTrue(torch.allclose(non_inf_expected_output, non_inf_output, atol=1e-12))
        self.assertTrue(torch.all(torch.eq(non_inf_expected_idx, non_inf_idx)))

    def test_top_k_top_p_filtering_with_filter_value(self):
        # 0.99 goes to top-p, 0.98 to top-k; filtered entries take filter_value instead of -inf
        logits = torch.tensor([[1, 1, 1, 0.99, 0.98]], dtype=torch.float, device=torch_device)
        expected_output = torch.tensor([[1, 1, 1, 0, 0]], dtype=torch.float, device=torch_device)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            output = top_k_top_p_filtering(logits, top_k=4, top_p=0.5, filter_value=0.0)
        self.assertTrue(torch.allclose(expected_output, output, atol=1e-12))

    def test_speculative_sampling(self):
        # vocabulary of 10; a prompt of 5 and 3 candidate tokens (1, 4, 5) from the assistant
        candidate_input_ids = torch.tensor([[8, 0, 3, 9, 8, 1, 4, 5]])
        candidate_logits = torch.tensor(
            [[
                [-10.0, 10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0],  # proposes 1
                [-10.0, -10.0, -10.0, -10.0, 10.0, -10.0, -10.0, -10.0, -10.0, -10.0],  # proposes 4
                [-10.0, -10.0, -10.0, -10.0, -10.0, 10.0, -10.0, -10.0, -10.0, -10.0],  # proposes 5
            ]]
        )
        candidate_length = 3
        new_logits = torch.tensor(
            [[
                [-10.0, 10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0],  # accepts 1
                [-10.0, -10.0, -10.0, -10.0, 10.0, -10.0, -10.0, -10.0, -10.0, -10.0],  # accepts 4
                [-INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF, 10.0, -INF],  # rejects 5, resamples 8
                [-10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0, -10.0],  # not reached
            ]]
        )
        last_assistant_token_is_eos = False
        max_matches = 5
        validated_tokens, n_matches = _speculative_sampling(
            candidate_input_ids, candidate_logits, candidate_length, new_logits, last_assistant_token_is_eos,
            max_matches,
        )
        self.assertTrue(n_matches.item() == 2)
        self.assertTrue(validated_tokens.tolist()[0] == [1, 4, 8])

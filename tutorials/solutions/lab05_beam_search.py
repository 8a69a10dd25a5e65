"""Solutions to tutorial 05's exercises (scoring finished hypotheses, is_done)."""

from __future__ import annotations

from _run import check_all


def hypothesis_score(sum_logprobs, generated_len, length_penalty):
    """The generated length (not the prompt) raised to the length penalty divides the summed log-probs."""
    return sum_logprobs / generated_len ** length_penalty


def is_done(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length,
            decoder_prompt_len):
    """A full pool: True stops at once; False compares with the best score at the current length;
    "never" with a positive penalty uses the longest reachable length (the real upper bound)."""
    if early_stopping is True:
        return True
    if early_stopping is False or length_penalty <= 0:
        best = best_sum_logprobs / (cur_len - decoder_prompt_len) ** length_penalty
    else:
        best = best_sum_logprobs / (max_length - decoder_prompt_len) ** length_penalty
    return bool(worst_score >= best)


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)

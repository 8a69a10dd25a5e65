"""Solutions to tutorial 07's exercises (generate's dispatch, a stopping criterion of your own)."""

from __future__ import annotations

from _run import check_all

from refdecode import StoppingCriteria


def generation_mode(config):
    """num_beams 1: greedy or sample (do_sample); more beams: group beam search if num_beam_groups > 1,
    else beam sample or beam search. top_k and the others do not choose the loop."""
    if config.get("num_beams", 1) == 1:
        return "sample" if config.get("do_sample", False) else "greedy_search"
    if config.get("num_beam_groups", 1) > 1:
        return "group_beam_search"
    return "beam_sample" if config.get("do_sample", False) else "beam_search"


class stop_on_token(StoppingCriteria):   # noqa: N801 -- named as the exercise
    """Stop when every row's last token is `token_id` (4.38 criteria answer for the whole batch)."""

    def __init__(self, token_id):
        self.token_id = token_id

    def __call__(self, input_ids, scores, **kwargs):
        return bool((input_ids[:, -1] == self.token_id).all())


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)

r"""Constraints of constrained beam search: "the output must contain this phrase (or one of these)".

Contract: a constraint is a small state machine fed one token at a time; it says which token would
advance it (:meth:`Constraint.advance`), whether a token does (:meth:`Constraint.does_advance`), and
how far it is from done (:meth:`Constraint.remaining`). :class:`ConstraintListState` tracks all the
constraints of one sequence and turns its progress into a **bank** number (how many constraint
tokens are fulfilled), which :mod:`refdecode.decoding.beam.constrained_beam_search` uses to keep beams at every
level of progress. No scores, no arrays: token ids as Python ints.

- :class:`PhrasalConstraint` ``[t1, t2, t3]``: the tokens must appear consecutively, in order.
- :class:`DisjunctiveConstraint` ``[[a, b], [c]]``: one of the phrases must appear (a trie).

The state machines are transformers 4.38.2's ``generation/beam_constraints.py``, ported line by line
because their quirks change which beams are kept (each is reproduced and tested):

1. A phrase that breaks off **loses the breaking token**: in "a b x" with phrase ``[b, c]``,
   ``x`` resets the phrase and is not tried as the start of another one; likewise a token that
   breaks a phrase is never checked against the phrase's own first token (``[a, a, b]`` is not found
   in ``a a a b``: the third ``a`` resets and is lost).
2. ``PhrasalConstraint.reset()`` sets ``fulfilled_idx = 0`` (not -1), but only the discarded
   in-progress object is reset; the list state re-queues a fresh copy.
3. ``DisjunctiveConstraint.copy(stateful=True)`` **shares** its ``current_seq`` list with the
   original, so a token added to the copy also advances the original. In constrained beam search
   this happens when one beam proposes several tokens of an in-progress disjunctive constraint:
   every proposal after the first sees the first one's token and usually resets to bank 0.
4. ``ConstraintListState.copy`` does not copy ``completed``.

Docs: docs/constrained-beam-search.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Constraint", "PhrasalConstraint", "DisjunctiveTrie", "DisjunctiveConstraint", "ConstraintListState",
           "constraints_from_config"]


def _check_token_list(name: str, token_ids: Any) -> list[int]:
    """A non-empty list of non-negative Python ints (transformers' rule), else ValueError naming ``name``."""
    if not isinstance(token_ids, list) or len(token_ids) == 0:
        raise ValueError(f"`{name}` has to be a non-empty list, but is {token_ids}.")
    if any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in token_ids):
        raise ValueError(f"Each list in `{name}` has to be a list of positive integers, but is {token_ids}.")
    return token_ids


def _check_token(token_id: Any) -> int:
    if isinstance(token_id, bool) or not isinstance(token_id, int):
        raise ValueError(f"`token_id` has to be an `int`, but is {token_id} of type {type(token_id)}")
    return token_id


class Constraint:
    """Base class: ``advance``, ``does_advance``, ``update``, ``reset``, ``remaining``, ``copy``; see the module."""

    seqlen: int
    completed: bool

    def advance(self) -> int | list[int] | None:
        raise NotImplementedError(f"{self.__class__} is an abstract class. Only classes inheriting this class can be called.")

    def does_advance(self, token_id: int) -> bool:
        raise NotImplementedError(f"{self.__class__} is an abstract class. Only classes inheriting this class can be called.")

    def update(self, token_id: int) -> tuple[bool, bool, bool]:
        raise NotImplementedError(f"{self.__class__} is an abstract class. Only classes inheriting this class can be called.")

    def reset(self) -> None:
        raise NotImplementedError(f"{self.__class__} is an abstract class. Only classes inheriting this class can be called.")

    def remaining(self) -> int:
        raise NotImplementedError(f"{self.__class__} is an abstract class. Only classes inheriting this class can be called.")

    def copy(self, stateful: bool = False) -> Constraint:
        raise NotImplementedError(f"{self.__class__} is an abstract class. Only classes inheriting this class can be called.")


class PhrasalConstraint(Constraint):
    """The tokens ``token_ids`` must appear consecutively, in this order.

    >>> c = PhrasalConstraint([5, 6])
    >>> c.advance(), c.update(5), c.advance(), c.update(6), c.completed
    (5, (True, False, False), 6, (True, True, False), True)
    >>> PhrasalConstraint([])
    Traceback (most recent call last):
    ValueError: `token_ids` has to be a non-empty list, but is [].
    """

    def __init__(self, token_ids: list[int]):
        self.token_ids = _check_token_list("token_ids", token_ids)
        self.seqlen = len(self.token_ids)
        self.fulfilled_idx = -1  # index of the last fulfilled token
        self.completed = False

    def advance(self) -> int | None:
        return None if self.completed else self.token_ids[self.fulfilled_idx + 1]

    def does_advance(self, token_id: int) -> bool:
        _check_token(token_id)
        return not self.completed and token_id == self.token_ids[self.fulfilled_idx + 1]

    def update(self, token_id: int) -> tuple[bool, bool, bool]:
        """(stepped, completed, reset): advance on the expected token, reset on any other."""
        _check_token(token_id)
        stepped = completed = reset = False
        if self.does_advance(token_id):
            self.fulfilled_idx += 1
            stepped = True
            completed = self.fulfilled_idx == self.seqlen - 1
            self.completed = completed
        else:
            reset = True
            self.reset()
        return stepped, completed, reset

    def reset(self) -> None:
        self.completed = False
        self.fulfilled_idx = 0  # sic (quirk 2): transformers 4.38.2 resets to 0, not -1

    def remaining(self) -> int:
        return self.seqlen - (self.fulfilled_idx + 1)

    def copy(self, stateful: bool = False) -> PhrasalConstraint:
        new = PhrasalConstraint(self.token_ids)
        if stateful:
            new.fulfilled_idx, new.completed = self.fulfilled_idx, self.completed
        return new


class DisjunctiveTrie:
    """A trie of token phrases: ``next_tokens(prefix)`` lists the tokens that extend ``prefix`` (insertion order).

    >>> trie = DisjunctiveTrie([[1, 2, 3], [1, 4], [5]])
    >>> trie.next_tokens([]), trie.next_tokens([1]), trie.reached_leaf([1, 4])
    ([1, 5], [2, 4], True)
    """

    def __init__(self, nested_token_ids: list[list[int]], no_subsets: bool = True):
        self.max_height = max(len(one) for one in nested_token_ids)
        root: dict[int, dict] = {}
        for token_ids in nested_token_ids:
            level = root
            for token_id in token_ids:
                level = level.setdefault(token_id, {})
        if no_subsets and self.count_leaves(root) != len(nested_token_ids):
            raise ValueError(f"Each list in `nested_token_ids` can't be a complete subset of another list, but is "
                             f"{nested_token_ids}.")
        self.trie = root

    def next_tokens(self, current_seq: list[int]) -> list[int]:
        node = self.trie
        for token in current_seq:
            node = node[token]
        return list(node.keys())

    def reached_leaf(self, current_seq: list[int]) -> bool:
        return len(self.next_tokens(current_seq)) == 0

    def count_leaves(self, root: dict) -> int:
        children = list(root.values())
        return 1 if not children else sum(self.count_leaves(child) for child in children)


class DisjunctiveConstraint(Constraint):
    """One of the phrases ``nested_token_ids`` must appear (e.g. the forms of a word: "rain", "rains").

    >>> c = DisjunctiveConstraint([[1, 2], [1, 3], [4]])
    >>> c.advance(), c.update(1), c.advance(), c.update(3), c.completed
    ([1, 4], (True, False, False), [2, 3], (True, True, False), True)
    """

    def __init__(self, nested_token_ids: list[list[int]]):
        if not isinstance(nested_token_ids, list) or len(nested_token_ids) == 0:
            raise ValueError(f"`nested_token_ids` has to be a non-empty list, but is {nested_token_ids}.")
        if any(not isinstance(token_ids, list) for token_ids in nested_token_ids):
            raise ValueError(f"`nested_token_ids` has to be a list of lists, but is {nested_token_ids}.")
        for token_ids in nested_token_ids:
            _check_token_list("nested_token_ids", token_ids)
        self.trie = DisjunctiveTrie(nested_token_ids)
        self.token_ids = nested_token_ids
        self.seqlen = self.trie.max_height
        self.current_seq: list[int] = []
        self.completed = False

    def advance(self) -> list[int] | None:
        token_list = self.trie.next_tokens(self.current_seq)
        return token_list or None

    def does_advance(self, token_id: int) -> bool:
        return _check_token(token_id) in self.trie.next_tokens(self.current_seq)

    def update(self, token_id: int) -> tuple[bool, bool, bool]:
        """(stepped, completed, reset); ``current_seq.append`` mutates a list a stateful copy may share (quirk 3)."""
        _check_token(token_id)
        stepped = reset = False
        if self.does_advance(token_id):
            self.current_seq.append(token_id)
            stepped = True
        else:
            reset = True
            self.reset()
        self.completed = self.trie.reached_leaf(self.current_seq)
        return stepped, self.completed, reset

    def reset(self) -> None:
        self.completed = False
        self.current_seq = []  # a new list: the sharing of quirk 3 ends here

    def remaining(self) -> int:
        return 0 if self.completed else self.seqlen - len(self.current_seq)

    def copy(self, stateful: bool = False) -> DisjunctiveConstraint:
        new = DisjunctiveConstraint(self.token_ids)
        if stateful:
            new.current_seq = self.current_seq  # sic (quirk 3): the same list object, as transformers 4.38.2
            new.completed = self.completed
        return new


class ConstraintListState:
    r"""The progress of one sequence on all its constraints: complete, one in progress, the rest pending.

    Its **bank** counts fulfilled constraint tokens:
    :math:`\text{bank} = n_\text{complete} \cdot M + (M - \text{remaining}_\text{in progress})` with
    :math:`M` the longest constraint's length (the second term only while one is in progress).

    >>> state = ConstraintListState([PhrasalConstraint([5, 6]), PhrasalConstraint([9])])
    >>> state.reset([1, 5]); state.get_bank(), state.advance()      # 5 of [5, 6] fulfilled: bank 0*2 + 1
    (1, [6])
    >>> state.reset([1, 5, 6, 2, 9]); state.get_bank(), state.completed
    (4, True)
    """

    def __init__(self, constraints: list[Constraint]):
        self.constraints = constraints
        self.max_seqlen = max(c.seqlen for c in constraints)
        self.n_constraints = len(constraints)
        self.completed = False
        self.init_state()

    def init_state(self) -> None:
        self.complete_constraints: list[Constraint] = []
        self.inprogress_constraint: Constraint | None = None
        self.pending_constraints = [constraint.copy(stateful=False) for constraint in self.constraints]

    def get_bank(self) -> int:
        add = 0
        if self.inprogress_constraint:
            add += self.max_seqlen - self.inprogress_constraint.remaining()
        return len(self.complete_constraints) * self.max_seqlen + add

    def advance(self) -> list[int] | None:
        """The tokens that would make progress: the in-progress constraint's next, else every pending one's first."""
        sources = [self.inprogress_constraint] if self.inprogress_constraint is not None else self.pending_constraints
        token_list: list[int] = []
        for constraint in sources:
            advance = constraint.advance()
            if isinstance(advance, int):
                token_list.append(advance)
            elif isinstance(advance, list):
                token_list.extend(advance)
        return token_list or None

    def reset(self, token_ids: list[int] | None) -> None:
        """Start over and feed ``token_ids`` (the whole sequence, prompt included) until complete."""
        self.init_state()
        if token_ids is not None:
            for token in token_ids:
                self.add(token)
                if self.completed:
                    break

    def add(self, token_id: int) -> tuple[bool, bool]:
        """Feed one token; (complete, stepped) of the constraint it touched."""
        _check_token(token_id)
        if self.completed:
            return True, False
        complete = stepped = False
        if self.inprogress_constraint is not None:
            stepped, complete, reset = self.inprogress_constraint.update(token_id)
            if reset:  # quirk 1: the token that broke the phrase is not tried elsewhere
                self.pending_constraints.append(self.inprogress_constraint.copy(stateful=False))
                self.inprogress_constraint = None
            if complete:
                self.complete_constraints.append(self.inprogress_constraint)  # type: ignore[arg-type]
                self.inprogress_constraint = None
                if len(self.pending_constraints) == 0:
                    self.completed = True
        else:
            for cidx, pending in enumerate(self.pending_constraints):
                if pending.does_advance(token_id):
                    stepped, complete, _ = pending.update(token_id)
                    if complete:
                        self.complete_constraints.append(pending)
                        self.inprogress_constraint = None
                    if not complete and stepped:
                        self.inprogress_constraint = pending
                    self.pending_constraints = self.pending_constraints[:cidx] + self.pending_constraints[cidx + 1:]
                    if len(self.pending_constraints) == 0 and self.inprogress_constraint is None:
                        self.completed = True
                    break
        return complete, stepped

    def copy(self, stateful: bool = True) -> ConstraintListState:
        """A new state; stateful copies keep the progress (not ``completed``: quirk 4)."""
        new = ConstraintListState(self.constraints)
        if stateful:
            new.complete_constraints = [c.copy(stateful=True) for c in self.complete_constraints]
            if self.inprogress_constraint is not None:
                new.inprogress_constraint = self.inprogress_constraint.copy(stateful=True)
            new.pending_constraints = [c.copy() for c in self.pending_constraints]
        return new


def constraints_from_config(constraints: list[Constraint] | None, force_words_ids: Any,
                            vocab_size: int | None = None) -> list[Constraint]:
    """``generate``'s constraints: ``constraints`` then one per entry of ``force_words_ids``, as 4.38.2.

    An entry that is a list of ints is a :class:`PhrasalConstraint`; a list of lists of ints is a
    :class:`DisjunctiveConstraint` (any one of the phrases). With ``vocab_size``, every token id of every
    constraint must be below it (4.38.2 fails with an IndexError deep in the scorer).

    >>> [type(c).__name__ for c in constraints_from_config(None, [[5, 6], [[7], [8, 9]]])]
    ['PhrasalConstraint', 'DisjunctiveConstraint']
    >>> constraints_from_config(None, [[]])
    Traceback (most recent call last):
    ValueError: `force_words_ids` has to either be a `List[List[List[int]]]` or `List[List[int]]` of positive integers, but is [[]].
    """
    final = list(constraints) if constraints is not None else []
    if any(not isinstance(c, Constraint) for c in final):
        raise ValueError(f"`constraints` has to be a list of Constraint objects (PhrasalConstraint, "
                         f"DisjunctiveConstraint), but is {constraints!r}")
    if force_words_ids is None:
        _check_vocab(final, vocab_size)
        return final
    message = ("`force_words_ids` has to either be a `List[List[List[int]]]` or `List[List[int]]` of positive "
               f"integers, but is {force_words_ids}.")

    def is_phrase(ids: Any) -> bool:
        return (isinstance(ids, list) and len(ids) > 0
                and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids))

    if not isinstance(force_words_ids, list) or len(force_words_ids) == 0:
        raise ValueError(message)
    for word_ids in force_words_ids:
        if isinstance(word_ids, list) and word_ids and isinstance(word_ids[0], list):
            if not all(is_phrase(ids) for ids in word_ids):
                raise ValueError(message)
            final.append(DisjunctiveConstraint(word_ids))
        elif is_phrase(word_ids):
            final.append(PhrasalConstraint(word_ids))
        else:
            raise ValueError(message)
    _check_vocab(final, vocab_size)
    return final


def _check_vocab(constraints: list[Constraint], vocab_size: int | None) -> None:
    """Every id of every constraint's ``token_ids`` (a phrase, or a disjunction's phrases) below ``vocab_size``."""
    if vocab_size is None:
        return
    ids = [t for c in constraints for x in getattr(c, "token_ids", []) for t in (x if isinstance(x, list) else [x])]
    beyond = sorted({int(t) for t in ids if t >= vocab_size})
    if beyond:
        raise ValueError(f"`force_words_ids` / `constraints` have to hold token ids in [0, {vocab_size}) (the "
                         f"vocabulary), but hold {beyond[:5]}")

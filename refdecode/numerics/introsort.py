r"""torch's CPU ``sort`` order, ties included: ``torch.sort(x, stable=False)`` reproduced in NumPy.

Contract: :func:`torch_cpu_sort_order` maps a float32 (or float16) array, 1-D or (B, V), to the int64
indices ``torch.sort(x, dim=-1, descending=descending).indices`` returns on the CPU with torch 2.13.0,
for every input (ties, ``-inf``, ``+inf``, NaN, ``-0.0`` included). :func:`torch_cpu_tie_order` gives
only the order torch puts a chosen set of tied entries in, which is all a warper needs and costs
little when the set is small.

What torch does (read in torch 2.13.0's source; docs/top-p.md, "for implementers", cites the lines):
``sort_kernel`` (aten/src/ATen/native/cpu/SortingKernel.cpp) sorts each row with ``std::sort`` on
(value, index) pairs when ``stable=False``, with the comparator ``a < b`` (ascending) or ``a > b``
(descending), NaN counted as the largest value (first when descending); the x86-simd-sort and
fbgemm radix paths of that file are not compiled into the 2.13.0 CPU wheel or do not apply
(radix: integers only). ``std::sort`` is the one of GCC's libstdc++ (the wheel is built with GCC 13),
an introsort (bits/stl_algo.h, ``std::__sort``):

1. ``__introsort_loop(first, last, 2 * floor(log2 n))``: while the range has more than 16 entries,
   move the median of (first+1, mid, last-1) to ``first`` (``__move_median_to_first``), partition
   ``[first+1, last)`` around it with Hoare's unguarded scan (``__unguarded_partition``: stop on
   ``not a < pivot`` from the left and ``not pivot < a`` from the right, swap, go on), recurse on the
   right part, loop on the left; when the depth limit reaches 0, heapsort the range
   (``__partial_sort`` = ``__make_heap`` + ``__sort_heap``, bits/stl_heap.h).
2. ``__final_insertion_sort``: an insertion sort of the whole row, which moves an entry only past
   *strictly* larger ones, so it never reorders equal keys.

Equal keys therefore come out in the order the partitions (and any heapsort) left them; rows of at
most 16 entries skip step 1, which is why torch's sort looks stable there. Nothing in it is random
or depends on threads (rows are sorted independently), so the order is a function of the row.

How it is reproduced here: the partition of a range is computed at once in NumPy (the k-th left
stop swaps with the k-th right stop while they have not crossed; see :func:`_partition`), ranges
of at most :data:`_SMALL` entries run the literal algorithm in Python, and a range is followed only
while it holds two or more of the entries whose relative order is wanted (the contents of a range
depend only on the partitions of the ranges that contain it). Step 2 is a stable sort.

Docs: docs/top-p.md ("Ties beyond 16 entries").
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["torch_cpu_sort_order", "torch_cpu_tie_order", "torch_cpu_reorder", "torch_order_at_cut", "sort_keys",
           "std_sort_literal", "std_partial_sort_literal", "std_push_heap", "std_pop_heap"]

_THRESHOLD = 16  # libstdc++'s _S_threshold: ranges of at most this many entries are left to the insertion sort
_SMALL = 96  # ranges of at most this many entries: the literal Python algorithm (faster than NumPy calls there)


def sort_keys(values: np.ndarray, descending: bool = False) -> np.ndarray:
    """float64 keys whose ascending order under ``<`` is torch's comparator on ``values``: (..., V).

    NaN is the largest value (``KeyValueCompAsc``) or the smallest (``KeyValueCompDesc``: NaN first);
    NaNs tie with each other, ``-0.0`` ties with ``0.0``. float32/float16 convert to float64 exactly,
    so ``+inf`` can take float64's largest finite value and NaN ``+inf`` without meeting another value.

    >>> sort_keys(np.array([1.0, np.nan, np.inf, -0.0], dtype=np.float32)).tolist()
    [1.0, inf, 1.7976931348623157e+308, -0.0]
    """
    keys = _check_values(values).astype(np.float64)
    keys[np.isposinf(keys)] = np.finfo(np.float64).max
    keys[np.isnan(keys)] = np.inf
    return -keys if descending else keys


def std_sort_literal(keys) -> list:
    """libstdc++'s ``std::sort`` on (key, index) pairs, line by line (slow; the reference for the fast path).

    Returns the indices in sorted order. ``keys``: a sequence of floats compared with ``<``.

    >>> std_sort_literal([0.0] * 17)      # what torch.sort(torch.zeros(17)) returns
    [8, 16, 15, 14, 13, 12, 11, 10, 9, 0, 7, 6, 5, 4, 3, 2, 1]
    """
    pairs = [(float(k), i) for i, k in enumerate(keys)]
    n = len(pairs)
    if n:
        _introsort_py(pairs, 0, n, 2 * (n.bit_length() - 1))
        _insertion_sort_py(pairs)
    return [i for _, i in pairs]


def std_partial_sort_literal(keys, middle: int) -> list:
    """libstdc++'s ``std::partial_sort(first, first + middle, last)`` on (key, index) pairs compared with ``<``:
    the indices in the order the call leaves them, the first ``middle`` sorted, the rest as ``__heap_select``
    left them (bits/stl_algo.h: ``__make_heap`` of the first ``middle``; each later entry smaller than the heap's
    top is swapped in by ``__pop_heap``; then ``__sort_heap``).

    >>> std_partial_sort_literal([5.0, 4.0, 3.0, 2.0, 1.0], 2)
    [4, 3, 0, 1, 2]
    """
    a = [(float(k), i) for i, k in enumerate(keys)]
    middle = min(int(middle), len(a))
    for parent in range((middle - 2) // 2, -1, -1):
        _adjust_heap_py(a, 0, parent, middle, a[parent])
    for i in range(middle, len(a)):
        if a[i][0] < a[0][0]:
            value, a[i] = a[i], a[0]
            _adjust_heap_py(a, 0, 0, middle, value)
    _sort_heap_py(a, middle)
    return [i for _, i in a]


def std_push_heap(heap: list, item: tuple) -> None:
    """``heap.push_back(item); std::push_heap(...)`` (``__push_heap``) on (key, ...) tuples compared by key with ``<``:
    the heap's front is its largest key."""
    heap.append(item)
    hole = len(heap) - 1
    parent = (hole - 1) // 2
    while hole > 0 and heap[parent][0] < item[0]:
        heap[hole] = heap[parent]
        hole, parent = parent, (parent - 1) // 2
    heap[hole] = item


def std_pop_heap(heap: list) -> tuple:
    """``std::pop_heap(...); heap.pop_back()``: removes and returns the front (the largest key)."""
    value, top = heap[-1], heap[0]
    heap[-1] = top
    if len(heap) > 1:
        _adjust_heap_py(heap, 0, 0, len(heap) - 1, value)
    return heap.pop()


def _sort_heap_py(a: list, last: int) -> None:
    """``__sort_heap(first, first + last)`` on a heap already made."""
    while last > 1:
        last -= 1
        value, a[last] = a[last], a[0]
        _adjust_heap_py(a, 0, 0, last, value)


def _median_to_first_py(a: list, first: int, x: int, y: int, z: int) -> None:
    """``__move_median_to_first(first, x, y, z)``: swap the median of a[x], a[y], a[z] into a[first]."""
    kx, ky, kz = a[x][0], a[y][0], a[z][0]
    if kx < ky:
        m = y if ky < kz else (z if kx < kz else x)
    else:
        m = x if kx < kz else (z if ky < kz else y)
    a[first], a[m] = a[m], a[first]


def _introsort_py(a: list, first: int, last: int, depth: int) -> None:
    """``__introsort_loop`` on ``a[first:last]`` (a list of (key, index) pairs), in place."""
    while last - first > _THRESHOLD:
        if depth == 0:
            _heapsort_py(a, first, last)
            return
        depth -= 1
        _median_to_first_py(a, first, first + 1, first + (last - first) // 2, last - 1)
        pivot = a[first][0]
        lo, hi = first + 1, last
        while True:  # __unguarded_partition(first + 1, last, first)
            while a[lo][0] < pivot:
                lo += 1
            hi -= 1
            while pivot < a[hi][0]:
                hi -= 1
            if not lo < hi:
                break
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1
        _introsort_py(a, lo, last, depth)
        last = lo


def _adjust_heap_py(a: list, base: int, hole: int, length: int, value: tuple) -> None:
    """``__adjust_heap`` then ``__push_heap`` (bits/stl_heap.h) on the heap ``a[base:base+length]``.

    tools/golden/make_torch_sort_golden.py has the same libstdc++ steps with a comparator that has side effects
    (McIlroy's adversary fixes values as it is asked); the golden tool imports nothing of refdecode, so the two
    stay apart."""
    top = second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if a[base + second][0] < a[base + second - 1][0]:
            second -= 1
        a[base + hole] = a[base + second]
        hole = second
    if length % 2 == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        a[base + hole] = a[base + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and a[base + parent][0] < value[0]:
        a[base + hole] = a[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[base + hole] = value


def _heapsort_py(a: list, first: int, last: int) -> None:
    """``__partial_sort(first, last, last)``: ``__make_heap`` then ``__sort_heap``, in place."""
    length = last - first
    if length >= 2:
        for parent in range((length - 2) // 2, -1, -1):
            _adjust_heap_py(a, first, parent, length, a[first + parent])
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap_py(a, first, 0, last - first, value)


def _insertion_sort_py(a: list) -> None:
    """``__final_insertion_sort``: a stable insertion sort (it moves an entry past strictly larger ones only)."""
    a.sort(key=lambda pair: pair[0])  # Python's sort is stable: the same result


def _partition(keys: np.ndarray, others: tuple, first: int, last: int) -> int:
    """``__unguarded_partition_pivot(first, last)`` on ``keys`` in place, all scans at once; returns the cut.

    ``others``: arrays aligned with ``keys`` (the ids, flags) that move with them.

    The median of three is moved to ``first`` and is the pivot ``p``. Scanning ``[first+1, last)``, the
    left scan stops at the entries with ``not key < p`` (positions L0 < L1 < ...), the right scan at
    those with ``not p < key`` (R0 > R1 > ...), in the ORIGINAL contents: the t-th swap exchanges
    L_t and R_t as long as L_t < R_t (an entry a scan passes was never touched by the other scan
    before the crossing). After K swaps the left scan stops at ``min(L_K, R_{K-1})`` (position
    R_{K-1} now holds the old entry L_{K-1}, a stop), which is the returned cut.
    """
    mid = first + (last - first) // 2
    kx, ky, kz = keys[first + 1], keys[mid], keys[last - 1]
    if kx < ky:
        m = mid if ky < kz else (last - 1 if kx < kz else first + 1)
    else:
        m = first + 1 if kx < kz else (last - 1 if ky < kz else mid)
    for arr in (keys, *others):
        arr[[first, m]] = arr[[m, first]]
    pivot = keys[first]
    part = keys[first + 1 : last]  # a view
    left = np.flatnonzero(~(part < pivot))  # ascending
    right = np.flatnonzero(~(pivot < part))[::-1]  # descending
    lo, hi = 0, min(left.size, right.size)
    while lo < hi:  # k = the first t with left[t] >= right[t]: left rises, right falls, so bisect
        t = (lo + hi) // 2
        if left[t] < right[t]:
            lo = t + 1
        else:
            hi = t
    k = lo
    if k == 0:
        return int(left[0]) + first + 1
    a, b = left[:k], right[:k]
    for arr in (part, *(o[first + 1 : last] for o in others)):
        arr[a], arr[b] = arr[b], arr[a]  # fancy indexing reads copies: a plain exchange
    stop = int(right[k - 1])
    if k < left.size:
        stop = min(stop, int(left[k]))
    return stop + first + 1


@functools.lru_cache(maxsize=512)
def _equal_range_order(n: int, depth: int) -> np.ndarray:
    """The introsort's arrangement of a range of ``n`` EQUAL keys entered with ``depth``: offsets (n,), read-only.

    With every key equal the algorithm's moves depend on ``n`` and ``depth`` only (every comparison is
    false), so the arrangement is computed once per (n, depth), from the halves' arrangements: a full
    row of 50,257 tied entries costs about 60 partitions of one array instead of thousands.
    """
    order = np.arange(n, dtype=np.int64)
    if n > _THRESHOLD:
        if depth == 0:
            pairs = [(0.0, i) for i in range(n)]
            _heapsort_py(pairs, 0, n)
            order = np.array([i for _, i in pairs], dtype=np.int64)
        else:
            cut = _partition(np.zeros(n), (order,), 0, n)
            order[:cut] = order[:cut][_equal_range_order(cut, depth - 1)]
            order[cut:] = order[cut:][_equal_range_order(n - cut, depth - 1)]
    order.setflags(write=False)
    return order


def _arrangement(keys: np.ndarray, watch: np.ndarray | None) -> np.ndarray:
    """The row's index order after ``__introsort_loop`` (before the final insertion sort): int64 (V,).

    Ranges that hold fewer than two ``watch`` entries are not sorted further (their inner order is
    left as it is); ``watch=None`` follows every range, the exact arrangement of the whole row.
    """
    n = keys.size
    keys = keys.copy()
    perm = np.arange(n, dtype=np.int64)
    stack = [(0, n, 2 * (n.bit_length() - 1))] if n else []
    while stack:
        first, last, depth = stack.pop()
        if last - first <= _THRESHOLD:
            continue
        count = last - first if watch is None else np.count_nonzero(watch[perm[first:last]])
        if count < 2:
            continue
        # One key: a known arrangement (NaN keys are +inf here, so they compare). When ``watch`` holds whole
        # tie groups (as every caller's does), only a range of watched entries can be one key: a range of
        # unwatched equal keys holds fewer than two watched ones and was left above.
        if count == last - first and keys[first:last].min() == keys[first:last].max():
            perm[first:last] = perm[first:last][_equal_range_order(last - first, depth)]
            continue
        if last - first <= _SMALL or depth == 0:
            pairs = list(zip(keys[first:last].tolist(), perm[first:last].tolist()))
            _introsort_py(pairs, 0, last - first, depth)
            perm[first:last] = [i for _, i in pairs]
            keys[first:last] = [k for k, _ in pairs]
            continue
        cut = _partition(keys, (perm,), first, last)
        stack.append((first, cut, depth - 1))
        stack.append((cut, last, depth - 1))
    return perm


def _check_values(values, name: str = "values") -> np.ndarray:
    if not isinstance(values, np.ndarray) or values.dtype not in (np.float32, np.float16):
        kind = values.dtype if isinstance(values, np.ndarray) else type(values).__name__
        raise TypeError(f"`{name}` has to be a float32 (or float16) numpy array, but is {kind}")
    return values


def torch_cpu_sort_order(values: np.ndarray, descending: bool = False) -> np.ndarray:
    """``torch.sort(values, dim=-1, descending=descending, stable=False).indices`` on the CPU: int64, same shape.

    ``values``: float32 (or float16), 1-D (V,) or 2-D (B, V) sorted along the last axis, each row on its
    own (as torch does). Entries with equal keys come out in torch's order, not in id order.

    >>> torch_cpu_sort_order(np.zeros(17, dtype=np.float32))
    array([ 8, 16, 15, 14, 13, 12, 11, 10,  9,  0,  7,  6,  5,  4,  3,  2,  1])
    """
    values = _check_values(values)
    if values.ndim not in (1, 2):
        raise ValueError(f"`values` has to be 1-D (vocab,) or 2-D (batch, vocab), but has shape {values.shape}")
    if values.ndim == 1:
        return torch_cpu_sort_order(values[None], descending)[0]
    keys = sort_keys(values, bool(descending))
    out = np.argsort(keys, axis=-1, kind="stable")  # the order of every entry that has no equal
    for b in range(values.shape[0]):
        sorted_keys = keys[b, out[b]]
        same = sorted_keys[1:] == sorted_keys[:-1]  # (V-1,) sorted neighbours that tie
        if not same.any():
            continue
        tied = np.zeros(keys.shape[1], dtype=bool)
        tied[out[b, 1:][same]] = True
        tied[out[b, :-1][same]] = True
        perm = _arrangement(keys[b], tied)
        out[b] = perm[np.argsort(keys[b, perm], kind="stable")]  # the final insertion sort: stable
    return out


def torch_cpu_tie_order(row: np.ndarray, members: np.ndarray, descending: bool = False) -> np.ndarray:
    """The ids ``members`` (entries of ``row`` with one key) in the order ``torch.sort(row)`` puts them: int64.

    ``row``: float32 (V,); ``members``: int ids into ``row`` whose values tie (torch's comparator: NaNs
    tie, ``-0.0`` ties ``0.0``). Only the ranges holding two or more members are followed, so for a
    small tie group in a full vocabulary this is a few partitions of ever smaller ranges.

    >>> torch_cpu_tie_order(np.zeros(17, dtype=np.float32), np.arange(17))[:9]   # top-p 0.5 drops these
    array([ 8, 16, 15, 14, 13, 12, 11, 10,  9])
    """
    row = _check_values(row, "row")
    if row.ndim != 1:
        raise ValueError(f"`row` has to be 1-D (vocab,), but has shape {row.shape}")
    members = np.asarray(members, dtype=np.int64)
    if members.ndim != 1 or (members.size and (members.min() < 0 or members.max() >= row.size)):
        raise ValueError(f"`members` has to be a 1-D array of ids in [0, {row.size}), but is {members!r}")
    keys = sort_keys(row, bool(descending))
    if members.size and np.unique(keys[members]).size > 1:
        raise ValueError("`members` have to tie (one key under torch's comparator), but their values differ: "
                         f"{np.unique(row[members])!r}")
    watch = np.zeros(row.size, dtype=bool)
    watch[members] = True
    if np.count_nonzero(watch) < 2:
        return np.unique(members)
    perm = _arrangement(keys, watch)
    return perm[watch[perm]]


def torch_cpu_reorder(row: np.ndarray, order: np.ndarray, positions: np.ndarray, descending: bool = False) -> np.ndarray:
    """``order`` (a stable sort of ``row``) with the entries at sorted ``positions`` put in torch's order: int64 (V,).

    ``row``: float32 (V,); ``order``: the stable argsort of ``row`` (``np.argsort(row, kind="stable")``,
    or of ``-row`` for ``descending``); ``positions``: the sorted positions of whole tie groups (every
    position of each group). Returns a new order equal to ``torch.sort(row, descending).indices`` at
    those positions and to ``order`` elsewhere.

    >>> row = np.zeros(17, dtype=np.float32); row[3] = 1.0
    >>> torch_cpu_reorder(row, np.argsort(row, kind="stable"), np.arange(16))
    array([ 8, 16, 15, 14, 13, 12, 11, 10,  9,  0,  7,  6,  5,  4,  2,  1,  3])
    """
    row = _check_values(row, "row")
    positions = np.unique(np.asarray(positions, dtype=np.int64))
    out = np.array(order, dtype=np.int64)
    if row.ndim != 1 or out.shape != row.shape:
        raise ValueError(f"`row` and `order` have to be 1-D of one length, but have shapes {row.shape} and {out.shape}")
    if positions.size and (positions[0] < 0 or positions[-1] >= row.size):
        raise ValueError(f"`positions` have to be sorted positions in [0, {row.size}), but are {positions!r}")
    if positions.size < 2 or row.size <= _THRESHOLD:
        return out
    keys = sort_keys(row, bool(descending))
    watch = np.zeros(row.size, dtype=bool)
    watch[out[positions]] = True
    perm = _arrangement(keys, watch)
    members = perm[watch[perm]]  # torch's relative order of the watched entries
    out[positions] = members[np.argsort(keys[members], kind="stable")]  # group by group, in key order
    return out


def torch_order_at_cut(row: np.ndarray, order: np.ndarray, cut: int, descending: bool = False) -> None:
    """If the entries at sorted positions ``cut - 1`` and ``cut`` tie, put their tie group in torch's order, in place.

    ``row``: float32 (V,), the whole row torch sorts; ``order``: int ids, a stable sort of ``row`` (or of a
    subset of its ids that holds every member of the group at the cut: top-p leaves out the ``-inf``
    entries); ``cut``: a sorted position where a warper treats ``order[:cut]`` and ``order[cut:]``
    differently (removed / kept). Which tied ids fall on each side is then torch's choice; every other
    position of ``order`` is left alone. Rows of at most 16 entries: torch's sort is stable, nothing moves.

    >>> order = np.arange(17)                    # the stable ascending order of zeros((17,))
    >>> torch_order_at_cut(np.zeros(17, dtype=np.float32), order, 8); order[8:]   # top-p 0.5 keeps these
    array([9, 0, 7, 6, 5, 4, 3, 2, 1])
    """
    if row.size <= _THRESHOLD or not 0 < cut < order.size:
        return
    values = row[order]
    a, b = values[cut - 1], values[cut]
    if a == b:
        group = values == a
    elif np.isnan(a) and np.isnan(b):
        group = np.isnan(values)
    else:
        return
    first, last = int(np.argmax(group)), int(group.size - np.argmax(group[::-1]))  # the group is one run
    order[first:last] = torch_cpu_tie_order(row, order[first:last], descending)

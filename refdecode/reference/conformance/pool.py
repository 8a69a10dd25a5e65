r"""Many implementation processes at once, the verdicts in the suite's order: threads here, or Ray tasks on a cluster.

Contract: :func:`in_threads` and :func:`on_ray` take a stream of cases and yield ``(case, Result)`` in the stream's
order, whatever order the answers came in, so ``check --jobs N`` and ``check --ray ADDRESS`` print what the serial
run prints. Each worker owns one implementation process (``check.Worker``: one request at a time, started again
after a case without an answer), so the lock-step protocol is unchanged: an implementation never sees two
requests at once. At most a few cases per worker are in flight; the rest of the stream is not read yet.
Closing the generator (``check`` stops after 3 misses in a row) cancels what has not started and ends every process.

- **threads** (``--jobs N``): N threads, each sending its case to an idle worker; the judging runs in these threads
  too (it is small beside the implementation's work);
- **Ray** (``--ray ADDRESS`` or ``--ray local``, the ``scale`` extra): the stream is cut into shards of
  :data:`SHARD_CASES` cases; each shard is a Ray task (:func:`run_shard`, one CPU) that starts its own
  implementation, runs its cases and returns their results. ``local`` starts a Ray runtime on this machine with
  ``jobs`` CPUs; an address joins a running cluster, whose nodes need refdecode installed, the implementation's
  command, and the suite folder at the same path (a shared file system), since a case names its model files by
  path. The command runs in the directory ``check`` was started in.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue
from typing import Any

__all__ = ["Counted", "in_threads", "on_ray", "run_shard", "SHARD_CASES", "IN_FLIGHT"]

SHARD_CASES = 16   # cases of one Ray task: a task's start-up (a process, a model load) spread over several cases
IN_FLIGHT = 2      # cases (threads) or shards (Ray) in flight per worker: one answering, one waiting


class Counted:
    """An iterator that counts the items taken from it (``check`` counts the cases not run after a stop)."""

    def __init__(self, items: Iterator[Any]):
        self.items, self.taken = items, 0

    def __iter__(self) -> Counted:
        return self

    def __next__(self) -> Any:
        item = next(self.items)
        self.taken += 1
        return item


def in_threads(cases: Iterator[dict], command: str, timeout: float, jobs: int,
               worker_type: Callable[[str, float], Any]) -> Iterator[tuple[dict, Any]]:
    """(case, result) in the order of ``cases``, answered by ``jobs`` implementation processes; ``worker_type``
    starts one (``check.Worker``; ``record_responses.py``'s keeps raw answers): a ``run(case)``, a ``stop()`` and a
    ``close()``. The pool takes the worker as an argument, so it imports nothing of ``check``, which imports it."""
    idle: SimpleQueue = SimpleQueue()
    workers = []

    def run(case: dict) -> Any:
        worker = idle.get()   # started on first use: a short run does not start processes it never asks
        if worker is None:
            worker = worker_type(command, timeout)
            workers.append(worker)
        try:
            return worker.run(case)
        finally:
            idle.put(worker)

    for _ in range(jobs):
        idle.put(None)
    pool = ThreadPoolExecutor(jobs, thread_name_prefix="conformance-worker")
    pending: deque = deque()
    finished = False
    try:
        for case in cases:
            pending.append((case, pool.submit(run, case)))
            if len(pending) >= IN_FLIGHT * jobs:
                case, future = pending.popleft()
                yield case, future.result()
        while pending:
            case, future = pending.popleft()
            yield case, future.result()
        finished = True
    finally:
        if not finished:   # stopped early (3 misses, an error, Ctrl-C): end the running cases now, not at their timeout
            for worker in list(workers):
                worker.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        for worker in workers:
            worker.close()   # done: standard input closed, 2 s to exit


def run_shard(cases: list[dict], command: str, timeout: float, cwd: str, worker_type: Callable[..., Any],
              max_misses: int) -> list[Any]:
    """A Ray task: start the implementation in ``cwd`` (``worker_type(command, timeout, cwd)``), run the shard's cases
    in order, end it. After ``max_misses`` cases in a row without an answer the rest is not run (None), as ``check``
    would stop."""
    worker, results, misses = worker_type(command, timeout, cwd), [], 0
    try:
        for case in cases:
            if misses >= max_misses:
                results.append(None)
                continue
            result = worker.run(case)
            misses = misses + 1 if result.missed else 0
            results.append(result)
    finally:
        worker.close()
    return results


def _shards(cases: Iterator[dict], size: int) -> Iterator[list[dict]]:
    shard: list[dict] = []
    for case in cases:
        shard.append(case)
        if len(shard) == size:
            yield shard
            shard = []
    if shard:
        yield shard


def on_ray(cases: Iterator[dict], command: str, timeout: float, address: str, jobs: int | None,
           worker_type: Callable[..., Any], max_misses: int) -> Iterator[tuple[dict, Any]]:
    """(case, result) in the order of ``cases``, from Ray tasks of SHARD_CASES cases; ``address``: ``local`` (a
    runtime started here with ``jobs`` CPUs) or a running cluster's (``jobs`` shards at once; default its CPUs)."""
    try:
        import ray
    except ImportError:
        raise ValueError('`--ray` needs Ray: pip install "refdecode[scale]"') from None
    started = not ray.is_initialized()
    if started:
        _start(ray, address, jobs)
    width = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
    task = ray.remote(num_cpus=1, max_retries=0)(run_shard)
    pending: deque = deque()
    cwd = os.getcwd()
    try:
        for shard in _shards(cases, SHARD_CASES):
            pending.append((shard, task.remote(shard, command, timeout, cwd, worker_type, max_misses)))
            if len(pending) >= IN_FLIGHT * width:
                yield from _in_order(*pending.popleft(), ray)
        while pending:
            yield from _in_order(*pending.popleft(), ray)
    finally:
        for _, ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


def _start(ray: Any, address: str, jobs: int | None) -> None:
    """Join the cluster at ``address``, or start a local runtime: on loopback, no dashboard, no usage report sent
    anywhere. Ray gives a local node 30 s to register; on a busy machine that may not be enough: tried 3 times."""
    if address != "local":
        ray.init(address=address, logging_level=logging.WARNING)
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    for attempt in range(3):
        try:
            ray.init(num_cpus=jobs, include_dashboard=False, logging_level=logging.WARNING,
                     _node_ip_address="127.0.0.1")
            return
        except Exception:  # noqa: BLE001 -- Ray raises a bare Exception when the node times out during start-up
            ray.shutdown()
            if attempt == 2:
                raise


def _in_order(shard: list[dict], ref: Any, ray: Any) -> Iterator[tuple[dict, Any]]:
    """The shard's (case, result) pairs; None for a case after the shard stopped (``check`` stops on reaching it,
    since the misses before it are in a row in the suite's order too)."""
    yield from zip(shard, ray.get(ref))

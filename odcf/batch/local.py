"""The local engine: worker processes on this machine.

Each worker process is started with ``spawn`` (no inherited locks or half-initialized native
libraries) and builds and warms its :class:`~odcf.batch.worker.Worker` once, in the pool's
initializer. The driver submits one chunk of records at a time and keeps at most
``2 × workers`` chunks in flight, so memory does not grow with the input; results are
yielded in submission order, so the output order is the input order whatever the timing.

``workers=0`` runs everything in the calling process (handy for debugging and small jobs).
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from odcf.batch.items import WorkItem
from odcf.batch.worker import BatchConfig, Outcome, Worker
from odcf.errors import OdcfError

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

_WORKER: Worker | None = None
_INIT_ERROR: str | None = None


class WorkerError(OdcfError):
    """A worker process could not start (its compressor failed to load) or died."""


def _init_worker(config: BatchConfig) -> None:
    """Pool initializer: build and warm the compressor once per process.

    A worker ignores SIGINT: Ctrl-C reaches the terminal's whole process group, and the driver
    handles it (it stops the workers, keeps the finished parts and says so in one line). QA s32/F #2:
    a worker still loading its models printed "Exception in initializer: Traceback … KeyboardInterrupt"
    (~25 lines) before that line, which reads as a crash."""
    global _WORKER, _INIT_ERROR
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # One worker per core: keep native thread pools from oversubscribing (unless the user chose).
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    exit_with_parent(os.getppid())
    try:
        _WORKER = Worker(config).warm_up()
    except Exception as exc:  # reported to the driver with the first chunk, as one clear error
        _INIT_ERROR = f"{type(exc).__name__}: {exc}"


def exit_with_parent(parent: int, *, poll: float = 1.0) -> threading.Thread:
    """End this process when *parent* is gone (a driver killed with SIGKILL cannot stop its pool:
    its workers, 600 MB each, would run on under init). A daemon thread checks every *poll* s."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os._exit(1)

    thread = threading.Thread(target=watch, name="odcf-exit-with-parent", daemon=True)
    thread.start()
    return thread


def _run_unit(items: list[WorkItem]) -> list[Outcome]:
    if _INIT_ERROR is not None or _WORKER is None:
        raise WorkerError(f"a worker could not load the compressor: {_INIT_ERROR}")
    return _WORKER.run_many(items)


def ordered_map(submit: Callable[[T], Future[R]], units: Iterable[T], *, max_inflight: int) -> Iterator[R]:
    """Results of ``submit(unit)`` for every unit, in order, with at most *max_inflight*
    units submitted and not yet yielded (the input is consumed lazily)."""
    if max_inflight < 1:
        raise ValueError("max_inflight must be at least 1")
    pending: deque[Future[R]] = deque()
    for unit in units:
        pending.append(submit(unit))
        while len(pending) >= max_inflight:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def run_local(units: Iterable[list[WorkItem]], config: BatchConfig, *, workers: int = 1,
              inflight_per_worker: int = 2) -> Iterator[list[Outcome]]:
    """Compress *units* (chunks of work items) and yield their outcomes in order."""
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    if workers == 0:
        worker = Worker(config).warm_up()
        for unit in units:
            yield worker.run_many(unit)
        return
    ctx = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(config,))
    try:
        yield from ordered_map(lambda unit: executor.submit(_run_unit, unit), units,
                               max_inflight=workers * inflight_per_worker)
    except BrokenProcessPool as exc:
        raise WorkerError(
            "a worker process died (killed, or out of memory?); finished parts are kept: "
            "rerun with --resume to continue (lower --max-chars if one record is too big)"
        ) from exc
    except BaseException:
        # Ctrl-C, SIGTERM, or the driver gave up on the results: the workers ignore SIGINT, so stop
        # them here rather than wait for a chunk in flight or a minute of model loading
        _stop_workers(executor)
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _stop_workers(executor: ProcessPoolExecutor) -> None:
    """Terminate the pool's processes (SIGTERM); what they were computing is lost, the finished
    parts are not. ``ProcessPoolExecutor.terminate_workers`` (Python 3.14) does this; before it,
    the pool's processes are only reachable as its ``_processes``."""
    terminate = getattr(executor, "terminate_workers", None)
    if terminate is not None:  # pragma: no cover - Python 3.14+
        terminate()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        try:
            if process.is_alive():
                process.terminate()
        except (OSError, ValueError):  # already reaped or closed
            pass


def pool_size_hint() -> int:  # pragma: no cover - trivial
    """A sensible default for ``--workers``: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


__all__: list[Any] = ["run_local", "ordered_map", "WorkerError", "pool_size_hint"]

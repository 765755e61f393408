"""The Ray engine: the same job on ``ray.data``, locally or on an existing Ray cluster.

Read → compress → write:

1. *read*: a :class:`Datasource` whose single read task (``num_cpus=0``, so that it never
   waits behind the actors that hold every CPU) streams the input with the very code
   the local engine uses (:func:`odcf.batch.job.work_items`: reading, validation, duplicate ids),
   so both engines accept and reject exactly the same records. The read runs on the driver's
   node (``supports_distributed_reads = False``): the input only has to exist where
   ``odcf batch`` runs.
2. *compress*: ``map_batches`` with :class:`CompressBatch`, a callable class run by a fixed pool
   of ``workers`` actors; each actor builds and warms its compressor once, in ``__init__``.
   ``batch_format="numpy"``; one row = one chunk of records, so Ray's per-row costs are paid
   once per chunk, and each chunk is its own block, so chunks spread over every actor.
3. *write*: the driver iterates the results in input order (``preserve_order``) and writes the
   same atomic parts as the local engine (:mod:`odcf.batch.parts`), so ``--resume``, the
   assembly and the reconciliation are shared and the output files are identical.

On a cluster (``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on the
others, odcf installed on every node), run ``odcf batch ... --engine ray --ray-address auto``.
"""
from __future__ import annotations

import contextlib
import logging
import pickle
import re
import warnings
from collections.abc import Iterator
from typing import Any

from odcf.batch.io import InputFile
from odcf.batch.items import SeenIds
from odcf.batch.parts import Chunk
from odcf.batch.worker import BatchConfig, Outcome, Worker
from odcf.errors import OdcfError

logger = logging.getLogger(__name__)


def _import_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise OdcfError("the Ray engine needs Ray Data: pip install 'odcf[ray]'") from exc
    return ray


class CompressBatch:
    """The ``map_batches`` actor: warms a :class:`Worker` once, then compresses numpy batches.

    Each row of a batch is one chunk of work items (pickled); the result row holds the chunk's
    outcomes (pickled). The driver and the actors run the same odcf, so pickle is safe here.
    """

    def __init__(self, config: BatchConfig) -> None:
        self.worker = Worker(config).warm_up()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        done = [pickle.dumps(self.worker.run_many(pickle.loads(unit)), protocol=pickle.HIGHEST_PROTOCOL)
                for unit in batch["unit"]]
        return {"outcomes": np.array(done, dtype=object)}


def _datasource(files: list[InputFile], config: BatchConfig, done: set[Chunk], seen_ids: SeenIds,
                chunk_size: int) -> Any:
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class WorkItemsDatasource(Datasource):
        """The job's validated work items in input order: one row (and one block) per chunk."""

        supports_distributed_reads = False

        def estimate_inmemory_data_size(self) -> int | None:
            return sum(f.size for f in files)

        def get_name(self) -> str:
            return "OdcfBatchInput"

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[Any]:
            def read() -> Iterator[Any]:
                import pyarrow as pa

                from odcf.batch.job import chunk_units, work_items

                for unit in chunk_units(work_items(files, config, done, dict(seen_ids), chunk_size), chunk_size):
                    data = pickle.dumps(unit, protocol=pickle.HIGHEST_PROTOCOL)
                    yield pa.table({"unit": pa.array([data], pa.large_binary())})

            meta = BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None,
                                 input_files=tuple(f.path for f in files))
            return [ReadTask(read, meta)]

    return WorkItemsDatasource()


@contextlib.contextmanager
def job_context(ray: Any) -> Iterator[None]:
    """Ray Data settings for a batch job, restored afterwards."""
    ctx = ray.data.DataContext.get_current()
    old = (ctx.execution_options.preserve_order, ctx.enable_progress_bars, ctx.target_max_block_size)
    ctx.execution_options.preserve_order = True  # results come back in input order
    ctx.enable_progress_bars = False  # odcf draws its own
    # Ray Data merges a task's small output blocks into one big block; the whole input would then
    # reach a single actor. With a tiny target every row (one chunk) stays a block of its own.
    ctx.target_max_block_size = 1
    warnings.filterwarnings("ignore", message="The minimum number of concurrent actors")
    try:
        yield
    finally:
        ctx.execution_options.preserve_order, ctx.enable_progress_bars, ctx.target_max_block_size = old


def build_dataset(ray: Any, source: Any, actor: type, actor_kwargs: dict[str, Any], *, workers: int,
                  chunk_size: int) -> Any:
    """read (one task, no CPU reserved) → ``map_batches`` over a fixed pool of *workers* actors,
    one chunk per call."""
    ds = ray.data.read_datasource(source, override_num_blocks=1, num_cpus=0)
    return ds.map_batches(
        actor, fn_constructor_kwargs=actor_kwargs, batch_size=1, batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1,
    )


def ray_cause(exc: BaseException) -> str:
    """What went wrong inside a Ray job: the innermost cause (Ray wraps a task's exception, and
    its message ends with advice on retries, not with the error), else the last ``…Error: …`` line.

    >>> class Wrapped(Exception): pass
    >>> outer = Wrapped("Task failed\\nValueError: bad row\\nTo change retry attempts, configure …")
    >>> ray_cause(outer)
    'ValueError: bad row'
    >>> outer.__cause__ = KeyError("k"); ray_cause(outer)
    "KeyError: 'k'"
    """
    inner, seen = exc, {id(exc)}
    while True:
        nxt = getattr(inner, "cause", None) or inner.__cause__
        if not isinstance(nxt, BaseException) or id(nxt) in seen:
            break
        inner = nxt
        seen.add(id(nxt))
    if inner is not exc and "ray" not in type(inner).__module__:
        return f"{type(inner).__name__}: {inner}"
    lines = [ln.strip() for ln in str(exc).splitlines() if _ERROR_LINE.match(ln.strip())]
    return lines[-1] if lines else (str(exc).strip().splitlines() or [type(exc).__name__])[0]


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b:? ")


def check_ray_address(address: str | None, timeout: float = 5.0) -> None:
    """Fail at once when *address* (``HOST:PORT`` or ``ray://HOST:PORT``) takes no connection:
    ``ray.init`` retries an unreachable head for minutes. ``auto`` and other forms are left to Ray."""
    if not address or address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    import socket

    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise OdcfError(f"--ray-address {address}: no Ray head answers there ({exc.strerror or exc}); start "
                        "one (ray start --head) or fix the address") from exc


def run_ray(files: list[InputFile], config: BatchConfig, done: set[Chunk], seen_ids: SeenIds, *,
            workers: int, chunk_size: int, address: str | None = None) -> Iterator[Outcome]:
    """Outcomes of every unfinished record, in input order, computed by ``workers`` Ray actors.

    Uses the Ray instance already initialized in this process if there is one; otherwise joins
    *address* (e.g. ``auto``) or starts a local instance, and shuts down what it started.
    """
    ray = _import_ray()
    workers = max(1, workers)
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING)
        started = True
    try:
        with job_context(ray):
            ds = build_dataset(ray, _datasource(files, config, done, seen_ids, chunk_size), CompressBatch,
                               {"config": config}, workers=workers, chunk_size=chunk_size)
            try:
                for batch in ds.iter_batches(batch_format="numpy", batch_size=None):
                    for outcomes in batch["outcomes"]:
                        yield from pickle.loads(outcomes)
            except ray.exceptions.RayError as exc:
                raise OdcfError(f"the Ray job failed: {ray_cause(exc)}") from exc
    finally:
        if started:
            ray.shutdown()

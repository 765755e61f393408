"""Run a batch job: read, compress on an engine, write atomic parts, assemble, reconcile.

>>> from odcf.batch import BatchConfig, run_batch
>>> summary = run_batch("tickets.jsonl", "out.jsonl", BatchConfig(ontology="general"), workers=2)  # doctest: +SKIP
>>> summary.records_in == summary.records_out + summary.records_failed                             # doctest: +SKIP
True

The driver (this module) owns the order: records are read and validated in input order
(:func:`odcf.batch.items.prepare`), compressed by the engine, and their outcomes come back
in the same order, chunk by chunk; each finished chunk becomes one atomic part file
(:mod:`odcf.batch.parts`). Resume, the final assembly and the reconciliation are the same
for every engine.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from odcf.batch.io import (InputFile, Key, count_records, discover, discover_inputs, format_of, parquet_columns,
                          read_records)
from odcf.batch.items import SeenIds, WorkItem, prepare
from odcf.batch.parts import (Assembled, BatchIntegrityError, Chunk, PartStore, all_chunks, chunk_len, chunk_of,
                              output_lock)
from odcf.batch.progress import Progress
from odcf.batch.records import DEFAULT_QUERY_FIELD
from odcf.batch.summary import BatchSummary
from odcf.batch.worker import BatchConfig, Outcome
from odcf.errors import InputError, Interrupted, OdcfError, UsageError

logger = logging.getLogger(__name__)

ENGINES = ("local", "ray")
DEFAULT_CHUNK_SIZE = 64


def output_format(output: str | os.PathLike[str], fmt: str | None = None) -> str:
    """``jsonl`` or ``parquet``: *fmt* when given, else from the output file's extension."""
    guessed = format_of(str(output))
    if fmt is not None:
        if fmt not in ("jsonl", "parquet"):
            raise UsageError(f"unknown output format {fmt!r} (use jsonl or parquet)")
        if (guessed is not None and guessed != fmt) or str(output).lower().endswith(".gz"):
            # plain JSON Lines in a .parquet or .gz file breaks every reader downstream
            raise UsageError(f"{output}: the extension says {'gzip' if str(output).lower().endswith('.gz') else guessed}"
                             f", --format says {fmt}; the output is written uncompressed in the format given, so "
                             "name it to match (.jsonl or .parquet)")
        return fmt
    if guessed is None or str(output).lower().endswith(".gz"):
        raise UsageError(f"{output}: cannot tell the output format from the extension "
                         "(use .jsonl or .parquet, or pass --format)")
    return guessed


def run_batch(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: BatchConfig,
    *,
    engine: str = "local",
    workers: int = 1,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    resume: bool = False,
    overwrite: bool = False,
    output_fmt: str | None = None,
    ray_address: str | None = None,
    progress: bool | None = None,
) -> BatchSummary:
    """Compress every record of *input* into *output*; failures go to ``OUTPUT.errors.jsonl``.

    *workers*: processes (local; 0 runs in this process) or actors (Ray). *chunk_size*: records
    per part file, the unit of crash safety. *progress*: None shows a bar only on a terminal.
    Raises :class:`OdcfError` for a bad job (unreadable input, unknown ontology or role, a
    changed job on ``resume``) and :class:`BatchIntegrityError` when the counts do not reconcile.
    """
    t0 = time.perf_counter()
    if engine not in ENGINES:
        raise OdcfError(f"unknown engine {engine!r} (use {' or '.join(ENGINES)})")
    if not isinstance(config, BatchConfig):
        raise OdcfError(f"config must be a BatchConfig, got {type(config).__name__}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise OdcfError(f"chunk size must be an integer of at least 1, got {chunk_size!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise OdcfError(f"workers must be 0 (in this process) or more, got {workers!r}")
    fmt = output_format(output, output_fmt)
    if engine == "ray":
        from odcf.batch.ray import check_ray_address

        check_ray_address(ray_address)  # before any part is written: an unreachable head is one quick error
    files, unread = discover(input)  # logs the entries of a folder left unread
    _check_paths(input, output, files)
    plan = _check_config(config)
    plan_hash = str(plan.hash)
    # Workers get the compiled plan, not the ontology path: Ray nodes need not see the file, and
    # an ontology edited during the job cannot make records disagree.
    config = dataclasses.replace(config, plan=plan.to_dict())
    with output_lock(output):
        return _run_locked(input, output, config, files, fmt, plan_hash, t0, engine=engine, workers=workers,
                           chunk_size=chunk_size, resume=resume, overwrite=overwrite, ray_address=ray_address,
                           progress=progress, unread=unread)


def _run_locked(input: str | os.PathLike[str], output: str | os.PathLike[str], config: BatchConfig,
                files: list[InputFile], fmt: str, plan_hash: str, t0: float, *, engine: str, workers: int,
                chunk_size: int, resume: bool, overwrite: bool, ray_address: str | None,
                progress: bool | None, unread: str = "") -> BatchSummary:
    counts = count_records(files, max_chars=config.max_chars)
    store = PartStore(output)
    job = {
        "inputs": [f.fingerprint() for f in files],
        "config": config.fingerprint(plan_hash),
        "chunk_size": chunk_size,
        "format": fmt,
    }
    done, seen_ids = store.begin(job, counts, chunk_size=chunk_size, resume=resume, overwrite=overwrite)
    already = sum(chunk_len(c, counts, chunk_size) for c in done)
    total = sum(counts)
    logger.info("batch: %d record(s) in %d file(s), %d already done; engine %s, %d worker(s)",
                total, len(files), already, engine, workers)
    # an input without a record (an empty file, blank lines only, a Parquet file of no rows) is no error:
    # a day without tickets is a normal run; but an empty output must not look like a job that worked
    nothing = "" if total else (f"{input}: the input holds no records (no JSON line, no Parquet row), so the "
                                "output is empty")
    if nothing:
        logger.warning("%s", nothing)

    # A misspelled --query-field would compress every record without its query, and look fine.
    # Parquet says at once (its schema); JSON Lines only once every record is read.
    early = _missing_query_column(files, config.query_field)
    if early:
        logger.warning("%s", early)
    bar = Progress(total, already=already, enabled=progress)
    try:
        if already < total:
            outcomes = _engine_outcomes(engine, files, config, done, seen_ids, workers=workers,
                                        chunk_size=chunk_size, ray_address=ray_address)
            _write_parts(store, outcomes, counts, chunk_size, bar)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the finished parts stay, and the line says how to go on
        finished = sum(chunk_len(c, counts, chunk_size) for c in all_chunks(counts, chunk_size)
                       if store.part_path(c).exists())
        raise Interrupted(getattr(exc, "how", "interrupted"),
                          f"rerun with --resume to continue ({finished} of {total} records done)") from exc
    except BatchIntegrityError as exc:
        changed = _changed_inputs(input, files)
        if changed:
            raise OdcfError(f"the input changed while the job ran ({changed}); the parts written so far stay "
                            f"in {store.dir}, but the job cannot resume on a changed input: run it again "
                            "with --overwrite once the input is final") from exc
        raise
    finally:
        bar.close()
    changed = _changed_inputs(input, files)
    if changed:
        raise OdcfError(f"the input changed while the job ran ({changed}); the output was not written: run the "
                        "job again with --overwrite once the input is final")
    totals = store.assemble(counts, chunk_size, fmt)
    warnings = _query_warnings(config.query_field, totals)
    if warnings and not early:
        logger.warning("%s", warnings[0])
    warnings = ((unread,) if unread else ()) + ((nothing,) if nothing else ()) + warnings  # logged above
    summary = BatchSummary(
        records_in=totals.records_in, records_out=totals.records_out, records_failed=totals.records_failed,
        tokens_in=totals.tokens_in, tokens_out=totals.tokens_out, seconds=time.perf_counter() - t0,
        output=str(output), errors=str(store.errors_path), engine=engine, workers=workers,
        resumed_records=already, warnings=warnings, records_empty=totals.empty,
        records_over_budget=totals.over_budget, records_with_warnings=totals.warned,
        first_warning=totals.first_warning,
    )
    if summary.records_in != summary.records_out + summary.records_failed:  # assemble checks too
        raise BatchIntegrityError(f"counts do not reconcile: {summary.to_dict()}")
    logger.info("batch done: %s", summary.to_dict())
    return summary


def _missing_query_column(files: list[InputFile], field: str) -> str:
    """The warning for a query field (not the default) that no column of an all-Parquet input
    has ("" when some file has it, or when the input holds JSON Lines)."""
    if field == DEFAULT_QUERY_FIELD or any(f.format != "parquet" for f in files):
        return ""
    columns: set[str] = set()
    for f in files:
        columns.update(parquet_columns(f))
    if field in columns:
        return ""
    shown = ", ".join(sorted(columns)[:8]) + (", ..." if len(columns) > 8 else "")
    return (f"--query-field {field!r}: no input file has this column (columns: {shown}), so every "
            "record is compressed without a query; is the name misspelled?")


def _query_warnings(field: str, totals: Assembled) -> tuple[str, ...]:
    """The job's warning when the query field is not the default and no record has it."""
    if field == DEFAULT_QUERY_FIELD or totals.queried or not totals.records_out:
        return ()
    return ((f"--query-field {field!r}: no record of the job has this field, so every record was "
             "compressed without a query; is the name misspelled?"),)


def _changed_inputs(input: str | os.PathLike[str], files: list[InputFile]) -> str:
    """What changed in the input since *files* were listed ("" when nothing did)."""
    try:
        now = {f.name: f.fingerprint() for f in discover_inputs(input, warn=False)}
    except OdcfError as exc:
        return str(exc)
    for f in files:
        if f.name not in now:
            return f"{f.shown} is gone"
        if now[f.name] != f.fingerprint():
            return f"{f.shown} was modified"
    extra = sorted(set(now) - {f.name for f in files})
    return f"{extra[0]} appeared" if extra else ""


def work_items(files: list[InputFile], config: BatchConfig, done: set[Chunk], seen_ids: SeenIds,
               chunk_size: int) -> Iterator[WorkItem]:
    """Validated work items of every unfinished chunk, in input order (lazily)."""
    def skip(key: Key) -> bool:
        return chunk_of(key, chunk_size) in done

    raws = read_records(files, skip=skip, max_chars=config.max_chars, batch_rows=chunk_size)
    for item in prepare(raws, query_field=config.query_field, max_chars=config.max_chars, seen_ids=seen_ids):
        if not isinstance(item, tuple):
            yield item


def chunk_units(items: Iterable[WorkItem], chunk_size: int) -> Iterator[list[WorkItem]]:
    """Group work items by chunk (the unit the local engine submits)."""
    unit: list[WorkItem] = []
    current: Chunk | None = None
    for item in items:
        c = chunk_of(item.key, chunk_size)
        if c != current and unit:
            yield unit
            unit = []
        current = c
        unit.append(item)
    if unit:
        yield unit


def _engine_outcomes(engine: str, files: list[InputFile], config: BatchConfig, done: set[Chunk],
                     seen_ids: SeenIds, *, workers: int, chunk_size: int,
                     ray_address: str | None) -> Iterator[Outcome]:
    if engine == "local":
        from odcf.batch.local import run_local

        units = chunk_units(work_items(files, config, done, seen_ids, chunk_size), chunk_size)
        for outcomes in run_local(units, config, workers=workers):
            yield from outcomes
        return
    from odcf.batch.ray import run_ray

    yield from run_ray(files, config, done, seen_ids, workers=workers, chunk_size=chunk_size,
                       address=ray_address)


def _write_parts(store: PartStore, outcomes: Iterable[Outcome], counts: list[int], chunk_size: int,
                 bar: Progress) -> None:
    """Collect ordered outcomes into chunks; write each chunk as one atomic part as soon as its
    last record is in (not when the next chunk's first arrives: a job that then hangs or is killed
    must lose only the chunks still in flight)."""
    rows: list[str] = []
    current: Chunk | None = None
    written: Chunk | None = None
    expected = tin = tout = 0
    next_key: Key | None = None
    for out in outcomes:
        c = chunk_of(out.key, chunk_size)
        if c != current:
            if current is not None:
                raise BatchIntegrityError(f"chunk {current} of the input has {expected} record(s) but the "
                                          f"engine returned {len(rows)}")
            if written is not None and c <= written:
                raise BatchIntegrityError(f"engine returned record {out.key} after its chunk {c} was written")
            current, rows, tin, tout = c, [], 0, 0
            expected = chunk_len(c, counts, chunk_size)
            next_key = (c[0], c[1] * chunk_size)
        if out.key != next_key:
            raise BatchIntegrityError(f"engine returned record {out.key}, expected {next_key}")
        if len(rows) >= expected:
            raise BatchIntegrityError(f"engine returned record {out.key}, beyond the {expected} record(s) "
                                      f"of chunk {c}")
        next_key = (out.key[0], out.key[1] + 1)
        rows.append(out.row)
        tin += out.tokens_in
        tout += out.tokens_out
        if len(rows) == expected:
            store.write_part(c, rows)
            bar.update(len(rows), tokens_in=tin, tokens_out=tout)
            current, written = None, c
    if current is not None:
        raise BatchIntegrityError(f"chunk {current} of the input has {expected} record(s) but the engine "
                                  f"returned {len(rows)}")


def _check_paths(input: str | os.PathLike[str], output: str | os.PathLike[str], files: list[InputFile]) -> None:
    out = Path(output).resolve()
    inp = Path(input).resolve()
    beside = PartStore(out)  # where the job writes beside OUTPUT: its error file and parts folder
    errors, parts = beside.errors_path, beside.dir
    written = {out: "the output", errors: "the error file", parts: "the parts folder"}
    for f in files:
        what = written.get(Path(f.path).resolve())
        if what is not None:
            raise InputError(f"{output}: {what} ({Path(f.path).name}) is also an input file; it would be replaced")
    if out.is_dir():
        raise InputError(f"{output}: is a folder; the output is a file")
    if inp.is_dir() and (inp == out.parent or inp in out.parents):
        raise InputError(f"{output}: the output (and its parts folder) must not be inside the input folder {input}")
    if not out.parent.exists():
        raise InputError(f"{output}: folder {out.parent} does not exist")
    if not out.parent.is_dir():
        raise InputError(f"{output}: {out.parent} is a file, not a folder")
    # QA s32/F #5: the paths beside OUTPUT are checked as OUTPUT is, before any work: a folder at
    # OUTPUT.errors.jsonl passed, the job compressed every record, then died in the assembly with a
    # traceback; a file at OUTPUT.parts was "holds an unfinished run: pass --resume", which then failed
    if errors.is_dir():
        raise InputError(f"{output}: {errors} is a folder, where odcf writes the error file; move it away")
    if parts.exists() and not parts.is_dir():
        raise InputError(f"{output}: {parts} is a file, where odcf keeps its parts folder; remove it")
    # QA s32/F #1: a folder that cannot be written (EACCES, a read-only mount, `chattr +i`) was a
    # PermissionError traceback from the lock file's os.open; a file made and dropped at once tells
    # (root passes os.access whatever the folder's flags, so try it)
    try:
        with tempfile.TemporaryFile(dir=out.parent):
            pass
    except OSError as exc:
        raise InputError(f"{output}: cannot write in folder {out.parent}: {exc.strerror or exc}") from exc


def _check_config(config: BatchConfig) -> Any:
    """Fail before any work on a bad ontology, role or tokenizer; return the compiled plan."""
    from odcf.tokens import get_counter

    compressor = config.build_compressor()
    if config.role is not None:
        compressor.plan.role(config.role)
    get_counter(config.tokenizer or compressor.plan.tokenizer)
    return compressor.plan


__all__: list[Any] = ["run_batch", "output_format", "work_items", "chunk_units", "ENGINES"]

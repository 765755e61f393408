"""A small ONNX Runtime session cache: one CPU session per model path and thread count per process.

>>> from odcf.backends.onnx import get_session          # doctest: +SKIP
>>> sess = get_session("model.onnx", threads=2)         # doctest: +SKIP
>>> get_session("model.onnx", threads=2) is sess        # doctest: +SKIP
True

onnxruntime is imported on first use, never at import time. Sessions run on the CPU execution
provider with a fixed intra-op thread count and sequential execution, so that the same input gives
the same output on the same machine.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from odcf.errors import StageError

logger = logging.getLogger(__name__)

_SESSIONS: dict[tuple[str, int], Any] = {}
_LOCK = threading.Lock()
#: How many sessions were created in this process (tests use it to prove a model loads once).
load_count = 0


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:  # pragma: no cover - core dependency
        raise StageError("ONNX models need `onnxruntime`: pip install onnxruntime") from exc
    return onnxruntime


def default_threads() -> int:
    """Intra-op threads of every ONNX model odcf runs (the embedder and the token compressor): the
    environment's ``ODCF_THREADS``, which must be a positive integer (``ODCF_THREADS=0``, ``-2`` or
    ``abc`` is a StageError, whichever model loads first); unset or empty, ``OMP_NUM_THREADS`` when it
    is a positive integer (another library's variable: any other value is left to it); else the CPU
    count capped at 4."""
    env = os.environ.get("ODCF_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise StageError(f"ODCF_THREADS must be a positive integer (the ONNX models' intra-op threads), "
                             f"got {env!r}")
        return n
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    return max(1, min(4, os.cpu_count() or 1))


def get_session(path: str | os.PathLike[str], *, threads: int | None = None) -> Any:
    """The shared ``InferenceSession`` for *path* (created once per path and thread count)."""
    global load_count
    resolved = str(Path(path).resolve())
    if not os.path.isfile(resolved):
        raise StageError(f"ONNX model {path!s}: no such file")
    n = threads or default_threads()
    key = (resolved, n)
    with _LOCK:
        sess = _SESSIONS.get(key)
        if sess is not None:
            return sess
        ort = _ort()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = n
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        try:
            sess = ort.InferenceSession(resolved, sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise StageError(f"ONNX model {path!s}: cannot be loaded: {exc}") from exc
        _SESSIONS[key] = sess
        load_count += 1
        logger.info("loaded ONNX model %s (%d thread%s)", resolved, n, "" if n == 1 else "s")
        return sess


def clear_sessions() -> None:
    """Forget every cached session (tests; freeing memory in long-lived workers)."""
    with _LOCK:
        _SESSIONS.clear()

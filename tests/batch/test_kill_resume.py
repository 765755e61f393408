"""Kill a real `odcf batch` process with SIGKILL mid-way, resume it, and check the output:
every record once, none missing, byte-identical to an uninterrupted run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from odcf.cli.main import main

from .helpers import read_jsonl, records, write_jsonl

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

N = 160
CHUNK = 2


def odcf_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "odcf", "batch", *args]


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL what is left of *proc*'s process group (an orphaned worker, if any)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_sigkill_then_resume(tmp_path, ontology):
    src = tmp_path / "in.jsonl"
    recs = records(N)
    recs[100] = {"id": recs[3]["id"], "context": "a duplicate id, after the kill point"}
    write_jsonl(src, recs[:50] + ["{not json"] + recs[50:])
    out = tmp_path / "out.jsonl"
    args = [str(src), str(out), "--ontology", ontology, "--role", "writer", "--workers", "1",
            "--chunk-size", str(CHUNK), "--no-timings", "--no-progress"]

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(odcf_cmd(*args), env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    parts = out.with_name("out.jsonl.parts")
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if parts.exists() and any(parts.glob("part-*.jsonl")):
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the job ended before it could be killed: {proc.communicate()}"
        assert any(parts.glob("part-*.jsonl")), "no part appeared in time"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _kill_group(proc)
    assert proc.returncode == -signal.SIGKILL
    finished = len(list(parts.glob("part-*.jsonl")))
    total_chunks = (N + 1 + CHUNK - 1) // CHUNK
    assert 1 <= finished < total_chunks, f"{finished} of {total_chunks} parts: not killed mid-way"
    assert not out.exists()

    # Without --resume the job refuses to touch the unfinished run.
    assert main(["batch", *args]) == 1
    assert main(["batch", *args, "--resume"]) == 0
    assert not parts.exists()

    rows = read_jsonl(out)
    ids = [r["id"] for r in rows]
    expected = [r["id"] for k, r in enumerate(recs) if k != 100]
    assert ids == expected  # every record once, in input order
    errors = read_jsonl(tmp_path / "out.jsonl.errors.jsonl")
    assert [e["line"] for e in errors] == [51, 102]
    assert errors[1]["error"] == f"duplicate id {recs[3]['id']!r}: an earlier record (in.jsonl line 4) has the same id"
    assert len(rows) + len(errors) == N + 1

    # And the result is exactly what an uninterrupted run gives.
    clean = tmp_path / "clean.jsonl"
    assert main(["batch", *args[:1], str(clean), *args[2:], "--workers", "0"]) == 0
    assert out.read_bytes() == clean.read_bytes()
    assert (tmp_path / "out.jsonl.errors.jsonl").read_bytes() == (tmp_path / "clean.jsonl.errors.jsonl").read_bytes()


def test_sigterm_ends_the_run_with_one_line_that_says_how_to_resume(tmp_path, ontology):
    # QA s29/qa3 #4: SIGTERM (a scheduler, `docker stop`) ended the run with no word but Python's
    # "leaked semaphore" warning, and left the lock file; SIGINT said only "odcf: interrupted"
    src = tmp_path / "in.jsonl"
    write_jsonl(src, records(N))
    out = tmp_path / "out.jsonl"
    args = [str(src), str(out), "--ontology", ontology, "--role", "writer", "--workers", "1",
            "--chunk-size", str(CHUNK), "--no-timings", "--no-progress"]
    proc = subprocess.Popen(odcf_cmd(*args), env={**os.environ, "OMP_NUM_THREADS": "1"}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parts = out.with_name("out.jsonl.parts")
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None and not any(parts.glob("part-*.jsonl")):
            time.sleep(0.02)
        assert proc.poll() is None, f"the job ended before it could be stopped: {proc.communicate()}"
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        _kill_group(proc)
    assert proc.returncode == 143, err
    done = sum(1 for part in parts.glob("part-*.jsonl") for _ in part.open())
    assert err.strip().splitlines() == [f"odcf: terminated; rerun with --resume to continue ({done} of {N} records done)"]
    assert 0 < done < N and not (tmp_path / ".out.jsonl.lock").exists()


#: A ``sitecustomize`` that keeps every worker in its pool initializer (loading its models) for a minute,
#: after it has said so in a file: the window in which QA s32/F #2 pressed Ctrl-C.
SLOW_WARM_UP = textwrap.dedent("""
    import os, time
    from pathlib import Path
    from odcf.batch.worker import Worker

    def warm_up(self):
        Path(os.environ["ODCF_TEST_WARMING"]).write_text(str(os.getpid()))
        time.sleep(60)
        return self

    Worker.warm_up = warm_up
""")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_the_workers_load_their_models_prints_only_the_one_line(tmp_path, ontology):
    # QA s32/F #2: Ctrl-C (SIGINT to the process group, as a terminal sends it) while a worker was still in
    # its initializer printed "Exception in initializer: Traceback … KeyboardInterrupt" (~25 lines) before
    # "odcf: interrupted; …": the workers ignore SIGINT, and the driver stops them
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SLOW_WARM_UP, encoding="utf-8")
    src = write_jsonl(tmp_path / "in.jsonl", records(8))
    out = tmp_path / "out.jsonl"
    warming = tmp_path / "warming"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ODCF_TEST_WARMING": str(warming),
           "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    args = [str(src), str(out), "--ontology", ontology, "--role", "writer", "--workers", "2", "--no-progress"]
    # the default SIGINT disposition, as a terminal's foreground job has it: a suite started from a background
    # shell (`make test &`) ignores SIGINT, the driver inherited that, and the test timed out waiting for it
    proc = subprocess.Popen(odcf_cmd(*args), env=env, start_new_session=True, preexec_fn=_default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not warming.exists():
            time.sleep(0.02)
        assert proc.poll() is None and warming.exists(), f"no worker reached its initializer: {proc.communicate()}"
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        stopped = time.monotonic() - t0
    finally:
        _kill_group(proc)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["odcf: interrupted; rerun with --resume to continue (0 of 8 records done)"]
    assert stopped < 20  # the driver stopped the workers: it did not wait out their minute of loading
    assert not (tmp_path / ".out.jsonl.lock").exists()

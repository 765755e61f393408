"""The Ray engine gives exactly the local engine's output (one local Ray instance for the module)."""
from __future__ import annotations

import pytest

from odcf.batch import BatchConfig, run_batch
from odcf.batch.parts import PartStore

from .helpers import records, write_jsonl
from .test_job import bad_input

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_ray_output_equals_local_output_byte_for_byte(tmp_path, ontology, local_ray, monkeypatch):
    src = bad_input(tmp_path)
    cfg = BatchConfig(ontology=ontology, role="writer", timings=False)
    local = run_batch(src, tmp_path / "local.jsonl", cfg, workers=0, chunk_size=3)

    # A Ray run that crashes after its first part, then resumes on Ray.
    real_write = PartStore.write_part
    calls = []

    def crash_after_one(self, chunk, rows):
        if calls:
            raise KeyboardInterrupt("simulated crash")
        calls.append(chunk)
        real_write(self, chunk, rows)

    monkeypatch.setattr(PartStore, "write_part", crash_after_one)
    with pytest.raises(KeyboardInterrupt):
        run_batch(src, tmp_path / "ray.jsonl", cfg, engine="ray", workers=2, chunk_size=3)
    monkeypatch.setattr(PartStore, "write_part", real_write)
    remote = run_batch(src, tmp_path / "ray.jsonl", cfg, engine="ray", workers=2, chunk_size=3, resume=True)

    assert remote.resumed_records == 3
    assert (remote.records_in, remote.records_out, remote.records_failed) == \
        (local.records_in, local.records_out, local.records_failed) == (12, 6, 6)
    assert (remote.tokens_in, remote.tokens_out) == (local.tokens_in, local.tokens_out)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert (tmp_path / "ray.jsonl.errors.jsonl").read_bytes() == (tmp_path / "local.jsonl.errors.jsonl").read_bytes()


def test_ray_parquet_output_equals_local(tmp_path, ontology, local_ray):
    pytest.importorskip("pyarrow")
    src = write_jsonl(tmp_path / "in.jsonl", records(9))
    cfg = BatchConfig(ontology=ontology, role="writer", timings=False)
    run_batch(src, tmp_path / "local.parquet", cfg, workers=0, chunk_size=4)
    run_batch(src, tmp_path / "ray.parquet", cfg, engine="ray", workers=2, chunk_size=4)
    assert (tmp_path / "ray.parquet").read_bytes() == (tmp_path / "local.parquet").read_bytes()


class PidActor:
    """Stands in for CompressBatch: says which actor process handled each record."""

    def __init__(self, config) -> None:
        import os

        self.pid = os.getpid()

    def __call__(self, batch):
        import pickle
        import time

        import numpy as np

        time.sleep(0.2)  # long enough that one actor cannot drain the queue alone
        first = [pickle.loads(unit)[0].key[1] for unit in batch["unit"]]
        return {"n": np.array(first), "pid": np.full(len(first), self.pid)}


def test_ray_spreads_chunks_over_every_actor_in_order(tmp_path, local_ray):
    from odcf.batch.io import discover_inputs
    from odcf.batch.ray import _datasource, build_dataset, job_context

    src = write_jsonl(tmp_path / "in.jsonl", records(40))
    cfg = BatchConfig()
    with job_context(ray):
        ds = build_dataset(ray, _datasource(discover_inputs(src), cfg, set(), set(), 2), PidActor,
                           {"config": cfg}, workers=2, chunk_size=2)
        rows = [(int(n), int(p)) for b in ds.iter_batches(batch_format="numpy", batch_size=None)
                for n, p in zip(b["n"], b["pid"])]
    assert [n for n, _ in rows] == list(range(0, 40, 2))  # one row per chunk, in order
    assert len({p for _, p in rows}) == 2, "every chunk went to the same actor"

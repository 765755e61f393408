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

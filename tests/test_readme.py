"""The README tour runs as written: its ontology is the example file and it compiles."""
from pathlib import Path

from odcf.compressor import Compressor
from odcf.plan.compiler import compile_file

ROOT = Path(__file__).resolve().parents[1]


def test_tour_ontology_is_the_example_file_and_compiles():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```yaml\n# my_contracts.yaml\n") + len("```yaml\n")
    block = readme[start:readme.index("```", start)]
    example = ROOT / "examples" / "my_contracts.yaml"
    assert block == example.read_text(encoding="utf-8")
    plan = compile_file(str(example))
    assert plan.domain == "supplier_contracts" and plan.role("writer").budget == 800


def test_tour_compression_keeps_the_cap(tmp_path):
    c = Compressor.from_ontology(str(ROOT / "examples" / "my_contracts.yaml"))
    text = (ROOT / "examples" / "msa_excerpt.md").read_text(encoding="utf-8")
    r = c.compress({"id": "msa", "text": text, "origin": "examples/msa_excerpt.md"},
                   query="liability cap", role="writer", budget=250)
    assert r.tokens_out <= 250 and "$250,000" in r.text and "Section 9.1" in r.text

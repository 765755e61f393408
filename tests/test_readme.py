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


def test_the_pipeline_diagram_is_the_stage_order():
    from odcf.pipeline import STAGE_ORDER

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("rules → segment")
    diagram = readme[start:readme.index("\n", start)]
    assert diagram.split(" → ") == [name for name, _ in STAGE_ORDER]


def test_files_the_readme_commands_name_exist():
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in re.findall(r"(?:-O|--ontology) ((?:ontologies|examples)/[\w./]+)", readme):
        assert (ROOT / path).is_file(), path


def test_the_record_fields_in_internals_are_the_fields_a_compress_record_has():
    import re

    doc = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    start = doc.index("## Delivery record")
    opening = doc.index("```\n", start) + 4
    block = doc[opening:doc.index("\n```", opening)]
    top = block[:block.index('"sources": [') + 10] + block[block.index('"stages"'):]
    documented = set(re.findall(r'"(\w+)"(?=[,:\s}]| \()', top))
    r = Compressor.from_ontology("general").compress(
        [{"id": "a", "text": "The cap is $5.", "timestamp": "2024-01-01", "confidence": 0.5, "category": "x",
          "speaker": "bob", "mandatory": True}, {"id": "b", "text": " "}], budget=100)
    assert set(r.record) <= documented and not documented & {"missing", "conflicts", "not_searched"}
    for entry in r.record["sources"]:
        assert all(f'"{key}"' in block for key in entry), entry
        for seg in entry["segments"]:
            assert all(f'"{key}"' in block for key in seg), seg
    assert '"reason"' in block[block.index('"sources": ['):block.index('"segments": [{')]


def test_the_handoff_page_python_example_runs_as_written_on_its_json_example(tmp_path, monkeypatch):
    import json
    import re

    page = (ROOT / "docs" / "handoff.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    items = re.search(r"```json\n(.*?)```", page, re.S).group(1)
    json.loads(items)
    (tmp_path / "items.json").write_text(items, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "docs/handoff.md", "exec"), scope)  # noqa: S102 - the project's own documentation
    r = scope["r"]
    assert r.text and r.tokens > 0 and r.record["role"] == "executor"


def test_the_readme_batch_examples_run_clean_on_the_records_it_describes(tmp_path, monkeypatch, capsys):
    # QA1 finding 2: the first command (`--role writer`) warned "required layer 'state': no input" on
    # every plain `context` record
    import json
    import re
    import shlex

    from odcf.cli.main import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Batch jobs")
    commands = re.findall(r"^odcf (batch \S+\.jsonl .*)$", readme[start:readme.index("```\n\n", start)], re.MULTILINE)
    assert commands
    example = re.search(r"^  `(\{\"id\": \"t1\", \"sources\": .*\})`\.$", readme[start:], re.MULTILINE)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tickets.jsonl").write_text(json.dumps({"id": "t1", "context": (
        "Customer: My order #W4817420 arrived broken. I want a replacement.")}) + "\n", encoding="utf-8")
    if example:
        (tmp_path / "tickets_with_state.jsonl").write_text(example.group(1) + "\n", encoding="utf-8")
    for command in commands:
        args = [a if a != "2" else "0" for a in shlex.split(command)]  # no worker processes in a test
        assert main(args) == 0
        assert "0 with warnings" in capsys.readouterr().out
        out = tmp_path / args[2]
        row = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
        assert row["record"]["warnings"] == [] and "#W4817420" in row["text"]


def _excerpt_of(excerpt, real, where="record"):
    """Whether the README's *excerpt* is part of *real*: the keys it names with the same values, a
    string ending in "…" a prefix, a float within 5e-4, a list of segments by id, any other list the first items."""
    if isinstance(excerpt, dict):
        assert isinstance(real, dict), where
        for key, value in excerpt.items():
            assert key in real, f"{where}.{key}: not in the real record"
            _excerpt_of(value, real[key], f"{where}.{key}")
    elif isinstance(excerpt, list) and where.endswith(".segments"):
        by_id = {seg["id"]: seg for seg in real}
        for seg in excerpt:
            _excerpt_of(seg, by_id[seg["id"]], f"{where}[{seg['id']}]")
    elif isinstance(excerpt, list):
        assert len(excerpt) <= len(real), where
        for k, value in enumerate(excerpt):
            _excerpt_of(value, real[k], f"{where}[{k}]")
    elif isinstance(excerpt, str) and excerpt.endswith("…"):
        assert real.startswith(excerpt[:-1]), f"{where}: {real!r} does not start with {excerpt[:-1]!r}"
    elif isinstance(excerpt, float):
        # a model score: the int8 kernels of another CPU may move its sixth decimal
        assert abs(excerpt - real) <= 5e-4, f"{where}: the README says {excerpt!r}, the real run {real!r}"
    else:
        assert excerpt == real, f"{where}: the README says {excerpt!r}, the real run {real!r}"


def test_the_readme_record_excerpt_is_the_real_record_of_the_tour_run(tmp_path, monkeypatch, capsys):
    # QA1 finding 4: segment #2's score and reason had drifted, and its marker:shall span was left out
    import json
    import shlex

    from odcf.cli.main import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```bash\nodcf compress examples/msa_excerpt.md")
    command = readme[start + len("```bash\nodcf "):readme.index("```", start + 8)].replace("\\\n", " ")
    args = shlex.split(command)
    args[args.index("--record") + 1] = str(tmp_path / "record.json")
    monkeypatch.chdir(ROOT)
    assert main(args) == 0
    capsys.readouterr()
    real = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    start = readme.index("```json\n", readme.index("### 4. Read the record")) + len("```json\n")
    excerpt = json.loads(readme[start:readme.index("```", start)])
    _excerpt_of(excerpt, real)

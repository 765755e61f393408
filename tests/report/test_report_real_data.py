"""Reports for real data from ../shared/data: an HTML page and a tau-bench trajectory (skipped when absent)."""
from __future__ import annotations

import gzip
import json
import re

from odcf.report.analyze import analyze
from odcf.report.html import record_status_counts, render_html

from .conftest import shared_data


def _check_page(page: str, record) -> None:
    for status, n in record_status_counts(record).items():
        assert f'<li data-status="{status}" data-count="{n}">' in page
    assert len(re.findall(r'class="seg st-', page)) == sum(len(s["segments"]) for s in record["sources"])


def test_report_for_a_real_html_page(plan, stage_switches, tmp_path):
    folder = shared_data("html_article_extraction", "html")
    path = sorted(folder.glob("*.html.gz"))[0]
    html_text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    src = {"id": path.name[:12], "text": html_text, "kind": "html", "origin": str(path)}
    rep = analyze([src], plan, budget=400, stages=stage_switches, entities=False)
    d = rep.to_dict()
    assert d["sources"][0]["kind"] == "html" and d["tokens_total"] > 1000
    assert d["tokens_out"] <= 400 or rep.result.record["over_budget"]
    stages = {s["stage"]: s for s in d["stages"]}
    if "rules" in stages:  # HTML to text removes the markup: the largest single saving on a raw page
        assert stages["rules"]["saved"] > 0.3 * d["tokens_total"]
        assert d["sources"][0]["tokens_after_rules"] == d["tokens_total"] - stages["rules"]["saved"]
    assert d["density"] and all(x["tokens"] >= 0 for x in d["density"])
    page = render_html(rep.result.document, rep.result.record, health=d)
    (tmp_path / "html_report.html").write_text(page, encoding="utf-8")
    _check_page(page, rep.result.record)
    if "rules" in stages:
        assert "html → markdown (source rules)" in page


def test_report_for_a_tau_bench_trajectory(plan, stage_switches, tmp_path):
    trajs = json.loads(shared_data("agent_tau_bench", "gpt-4o-airline.json").read_text(encoding="utf-8"))
    traj = trajs[0]["traj"]
    sources = []
    for k, msg in enumerate(traj):
        role = msg.get("role")
        text = msg.get("content") or ""
        if msg.get("tool_calls"):
            text += "\n" + json.dumps(msg["tool_calls"], ensure_ascii=False)
        if not text.strip():
            continue
        layer = "instruction" if role == "system" else "history"
        kind = "tool" if role == "tool" else "chat"
        sources.append({"id": f"m{k:03d}", "text": text, "layer": layer, "kind": kind, "speaker": role})
    rep = analyze(sources, plan, budget=1500, stages=stage_switches, entities=False)
    d = rep.to_dict()
    layers = {x["layer"]: x for x in d["layers"]}
    assert set(layers) == {"instruction", "history"}
    assert layers["instruction"]["tokens"] + layers["history"]["tokens"] == d["tokens_total"]
    # ids and dates in the trajectory are entities: the history is not all low-density
    hist = [x for x in d["density"] if x["source"] != "m000"]
    assert any(x["entities"] > 0 for x in hist)
    # tool outputs are JSON in this data set: minifying them is a saving the report names
    if any(s["kind"] == "tool" and s["text"].lstrip()[:1] in "{[" for s in sources):
        assert any(n["kind"] == "minifiable_json" for n in d["noise"]) or all(
            json.dumps(json.loads(s["text"]), separators=(",", ":")) == s["text"].strip()
            for s in sources if s["kind"] == "tool" and s["text"].lstrip()[:1] in "{[")
    page = render_html(rep.result.document, rep.result.record, health=d)
    (tmp_path / "tau_report.html").write_text(page, encoding="utf-8")
    _check_page(page, rep.result.record)

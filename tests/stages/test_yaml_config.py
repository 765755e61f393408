"""A YAML config (a .yaml file, or a block of YAML in a tool's output) is delivered by paths: a
line only under its key lines, a key line only with a child, children left out said in a comment."""
import pytest
import yaml

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter

VALUES = """\
# Helm values for payments-api (prod)
replicaCount: 4
image:
  repository: registry.internal/payments-api
  tag: v2.14.3
  pullPolicy: IfNotPresent

# Sidecar
logShipper:
  enabled: true
  resources:
    limits:
      cpu: 200m
      memory: 2Gi

autoscaling:
  enabled: false
  minReplicas: 4
  maxReplicas: 12
  targetCPUUtilizationPercentage: 70

ingress:
  enabled: true
  className: nginx
  hosts:
    - host: payments.example.com
      paths:
        - path: /
          pathType: Prefix

podDisruptionBudget:
  enabled: true
  minAvailable: 2
"""

QUERIES = ("is autoscaling enabled and what is maxReplicas?", "which image repository and tag?",
           "is the pod disruption budget enabled?", "ingress host and path")


def leaves(value, path=()):
    """(path, value) of every scalar of a loaded YAML value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from leaves(v, path + (k,))
    else:
        yield path, value


def lookup(value, path):
    for k in path:
        value = value[k]
    return value


@pytest.mark.parametrize("ontology", ["agent_ops", "general"])
def test_a_yaml_line_is_delivered_only_under_its_own_path(ontology):
    # QA: "autoscaling:" / "maxReplicas: 12" / "enabled: true" / "enabled: true" read as
    # autoscaling.enabled = true; those were ingress.enabled and podDisruptionBudget.enabled
    c = Compressor.from_ontology(ontology)
    full = yaml.safe_load(VALUES)
    delivered_any = False
    for query in QUERIES:
        for budget in (40, 60, 90, 140, 200):
            r = c.compress([Source(id="values.yaml", text=VALUES)], query=query, budget=budget,
                           annotate=False, timings=False)
            if not r.text.strip():
                continue
            got = yaml.safe_load(r.text)  # the markers are comments: still YAML
            assert isinstance(got, dict), (query, budget, r.text)
            for path, value in leaves(got):
                delivered_any = True
                assert lookup(full, path) == value, (query, budget, path, r.text)
            for line in r.text.splitlines():
                if line.rstrip().endswith(":") and not line.lstrip().startswith("#"):
                    # a key line delivered with none of its children would read as null
                    key = line.strip().rstrip(":").lstrip("- ")
                    assert _holds_something(got, key), (query, budget, line, r.text)
    assert delivered_any


def _holds_something(value, key):
    if isinstance(value, dict):
        return any((k == key and v is not None) or _holds_something(v, key) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_something(v, key) for v in value)
    return False


def test_children_left_out_are_marked_as_yaml_comments():
    segs = Segmenter()(Document.from_sources([Source(id="a", text=VALUES)]), Plan(domain="t")).segments
    pick = [s for s in segs if s.text.strip() in ("autoscaling:", "maxReplicas: 12")]
    # autoscaling holds 4 keys, the file 6: what is left out of each is said at its indentation
    assert join_segments(pick) == "autoscaling:\n  maxReplicas: 12\n  # [YAML_KEYS: 3]\n# [YAML_KEYS: 5]"
    hosts = [s for s in segs if s.text.strip() in ("ingress:", "hosts:", "- host: payments.example.com", "paths:",
                                                  "- path: /", "pathType: Prefix")]
    assert join_segments(hosts).endswith("pathType: Prefix\n  # [YAML_KEYS: 2]\n# [YAML_KEYS: 5]")
    assert join_segments(segs) == VALUES.rstrip()  # all delivered: no marker
    r = Compressor.from_ontology("agent_ops").compress([Source(id="values.yaml", text=VALUES)],
                                                       query="what is maxReplicas?", budget=60,
                                                       annotate=False, timings=False)
    top = [line for line in r.text.splitlines() if line[:1].isalpha()]
    mark = [line for line in r.text.splitlines() if line.startswith("# [YAML_KEYS: ")]
    assert len(top) + sum(int(m.split(": ")[1].rstrip("]")) for m in mark) == 6, r.text


def test_yaml_segments_are_nodes_with_their_paths():
    doc = Document.from_sources([Source(id="a", text=VALUES)])
    segs = Segmenter()(doc, Plan(domain="t")).segments
    by_text = {s.text.strip().splitlines()[-1].strip(): s for s in segs}
    enabled = by_text["enabled: false"]
    assert segs[enabled.meta["under"]].text.strip() == "autoscaling:"
    assert all(s.kind == "code" for s in segs)  # YAML comments are no markdown headings
    assert segs[0].text.startswith("# Helm values") and segs[0].text.endswith("replicaCount: 4")
    path = by_text["pathType: Prefix"].meta["yaml_path"]
    assert [segs[i].text.strip().splitlines()[-1].strip() for i in path] == [
        "ingress:", "hosts:", "- host: payments.example.com", "paths:", "- path: /"]


def test_yaml_inside_text_is_read_as_a_config_and_prose_is_not():
    text = ("The deploy failed. Current config of the service:\n\nservice:\n  name: payments\n  port: 8080\n"
            "autoscaling:\n  enabled: false\n  maxReplicas: 12\ningress:\n  enabled: true\n"
            "  host: pay.example.com\n\nPlease check why the pods do not scale.\n")
    segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
    assert segs[0].kind == "sentence" and segs[-1].kind == "sentence"
    maxr = next(s for s in segs if s.text.strip() == "maxReplicas: 12")
    assert segs[maxr.meta["under"]].text == "autoscaling:"
    c = Compressor.from_ontology("agent_ops")
    for budget in (40, 60, 80):
        r = c.compress([Source(id="a", text=text)], query="is autoscaling enabled?", budget=budget,
                       annotate=False, timings=False)
        lines = r.text.splitlines()
        for k, line in enumerate(lines):
            if line.strip() in ("enabled: false", "enabled: true"):
                parent = next(x for x in reversed(lines[:k]) if x and not x.startswith(" "))
                want = "autoscaling:" if line.strip() == "enabled: false" else "ingress:"
                assert parent == want, r.text


def test_email_headers_transcripts_and_code_are_no_yaml():
    for text in ("From: a@x.com\nTo: b@x.com\nSubject: Refund\n\nPlease refund order 7.\n",
                 "Alice: we ship today\nBob: fine by me\nAlice: good\n",
                 "class A:\n    x: int = 1\n    y: str\n"):
        segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
        assert not any("yaml_block" in s.meta for s in segs), text


DESCRIBE = """\
Name:             payments-api-7d9f8c6b5-x2k4q
Namespace:        prod
Service Account:  payments-api
Annotations:      kubectl.kubernetes.io/restartedAt: 2024-06-10T22:15:03Z
Labels:           app=payments-api
                  version=v2.14.3
Status:           Running
Containers:
  payments-api:
    Image:          registry.internal/payments-api:v2.14.3
    State:          Running
      Started:      Tue, 11 Jun 2024 09:47:12 +0000
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Restart Count:  7
    Limits:
      cpu:     1
      memory:  512Mi
    Requests:
      cpu:      250m
      memory:   256Mi
    Mounts:
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-7h2xq (ro)
QoS Class:        Burstable
Events:
  Type     Reason     Age                 From     Message
  ----     ------     ----                ----     -------
  Normal   Pulled     14m (x8 over 105m)  kubelet  Container image already present on machine
  Warning  BackOff    15m (x21 over 98m)  kubelet  Back-off restarting failed container payments-api
"""


def test_kubectl_describe_is_read_as_a_tree_of_keys_and_scored_with_its_path():
    # QA: the whole "Containers:" block was one 463-token sentence, so OOMKilled, exit code 137 and the
    # 512Mi limit could not be delivered under ~800 tokens; its values hold colons, so it is no YAML
    out = Segmenter()(Document.from_sources([Source(id="d", text=DESCRIBE)]), Plan(domain="t")).segments
    by_text = {s.text.strip(): s for s in out}
    reason = by_text["Reason:       OOMKilled"]
    assert [out[i].text.strip() for i in reason.meta["yaml_path"]] == [
        "Containers:", "payments-api:", "Last State:     Terminated"]
    assert by_text["Labels:           app=payments-api\n                  version=v2.14.3"].kind == "code"
    assert [s.kind for s in out if "BackOff" in s.text or "Pulled" in s.text] == ["table", "table"]
    # "memory: 512Mi" is scored as the limit it is, under "Limits:", and the request under "Requests:"
    from odcf.stages.rank import scoring_texts

    doc = Segmenter()(Document.from_sources([Source(id="d", text=DESCRIBE)]), Plan(domain="t"))
    limit = next(s for s in doc.segments if s.text.strip() == "memory:  512Mi")
    assert scoring_texts(doc, [limit]) == ["Containers payments-api Limits " + limit.text]
    r = Compressor.from_ontology("agent_ops").compress(
        {"id": "d", "text": DESCRIBE}, query="why does payments-api keep restarting and what is its memory limit?",
        budget=150)  # of 317
    assert "Reason:       OOMKilled" in r.text and "memory:  512Mi" in r.text, r.text
    assert "    Last State:     Terminated\n      Reason:       OOMKilled" in r.text


def test_a_transcript_of_name_and_sentence_lines_over_a_list_is_no_config():
    # found writing a meeting test: "Priya Nair: … by 28 March." lines over "Action items:" and its
    # "- Luis Ortega: remove …" items nest and were read as a YAML config (nodes under "# [YAML_KEYS: 7]")
    text = ("Priya Nair: First item is the settlement failure last Tuesday. Tom, can you summarise?\n"
            "Tom Becker: Batch 88412 failed at 02:14 because the ledger database ran out of connections.\n"
            "Luis Ortega: We raised the pool size from 20 to 40 on Wednesday.\n"
            "Priya Nair: Luis, you own removing write access from the ETL role, by 28 March.\n"
            "Tom Becker: Also, the FX cache warning: the TTL is 900 seconds but we saw age 1834.\n"
            "\n"
            "Action items:\n"
            "- Luis Ortega: remove write access from the ETL role (due 28 March)\n"
            "- Tom Becker: add an alert on connection pool saturation (due 4 April)\n")
    r = Compressor.from_ontology("general").compress(text, query="who owns what, by when?", budget=70,
                                                     annotate=False, timings=False)
    assert "YAML_" not in r.text and not any("yaml_block" in s.meta for s in r.document.segments), r.text
    assert any(s.meta.get("speaker") == "Tom Becker:" for s in r.document.segments)


FRONT = """\
---
title: Quarterly migration plan
author: Dana Kim
date: 2025-03-11
tags: [infra, migration]
---

# Quarterly migration plan

We will move the billing database from cluster A to cluster C in April. The cutover window is 02:00–04:00 UTC on April 12.

Rollback must be possible for 48 hours after cutover. Do not delete the old replicas before April 14.

## Risks

The replication lag on cluster C has exceeded 30 seconds twice this month. If lag exceeds 60 seconds during cutover, abort.
"""


def test_front_matter_is_a_config_delivered_between_both_fences_or_not_at_all():
    # QA: front-matter cut as prose: its opening "---" left out, its closing one kept ("tags: […]\n---" read as a
    # setext heading), author and date dropped with no mark
    segs = Segmenter()(Document.from_sources([Source(id="plan.md", text=FRONT)]), Plan(domain="t")).segments
    keys = [s for s in segs if s.meta.get("yaml_fence")]
    assert [s.text for s in keys] == ["title: Quarterly migration plan", "author: Dana Kim", "date: 2025-03-11",
                                      "tags: [infra, migration]"]
    assert "---" not in [s.text.strip() for s in segs]  # the fences are no segments
    assert join_segments(segs) == FRONT.rstrip()  # all delivered: as in the source
    # keys left out counted at the block's end, inside the fences; what follows after the closing one
    assert join_segments([keys[0], keys[3], segs[4]]) == (
        "---\ntitle: Quarterly migration plan\ntags: [infra, migration]\n# [YAML_KEYS: 2]\n---\n\n"
        "# Quarterly migration plan")
    assert join_segments([keys[1], segs[5]]) == (
        "---\nauthor: Dana Kim\n# [YAML_KEYS: 3]\n---\n\n"
        "We will move the billing database from cluster A to cluster C in April.")
    c = Compressor.from_ontology("general")
    seen_keys = False
    for query in ("cutover rollback", "who is the author and what is the date"):
        for budget in range(20, 130, 6):
            r = c.compress([Source(id="plan.md", text=FRONT)], query=query, budget=budget, annotate=False,
                           timings=False)
            lines = r.text.split("\n")
            fm = [k for k, line in enumerate(lines) if line in ("title: Quarterly migration plan", "author: Dana Kim",
                                                               "date: 2025-03-11", "tags: [infra, migration]")]
            if not fm:
                assert "---" not in lines, (query, budget, r.text)
                continue
            seen_keys = True
            assert lines[0] == "---" and lines.count("---") == 2, (query, budget, r.text)
            close = lines.index("---", 1)
            front = yaml.safe_load("\n".join(lines[1:close]))
            marks = sum(int(line.split(": ")[1].rstrip("]")) for line in lines[1:close] if line.startswith("# [YAML_KEYS"))
            assert len(front) + marks == 4, (query, budget, r.text)
    assert seen_keys


JOB = """\
name: nightly-export
description: Runs the nightly job.
owner: Exports the ledger to the warehouse.
notes: Do not run during month-end close.
schedule: "0 2 * * *"
timeout: 3600
"""


def test_a_source_declared_yaml_is_a_config_whatever_its_values(tmp_path, capsys):
    # QA: a .yaml file whose keys mostly hold a sentence (and do not nest) was cut as prose: at a budget of 40
    # owner, notes ("Do not run during month-end close.") and schedule were left out with no [YAML_KEYS] mark
    c = Compressor.from_ontology("general")
    query = "what does the cleanup job do and its timeout"
    for source in (Source(id="job.yaml", text=JOB), {"id": "jobs/export.YML", "text": JOB},
                   Source(id="s1", origin="/etc/jobs/export.yaml", text=JOB)):
        r = c.compress([source], query=query, budget=40, annotate=False, timings=False)
        assert all(s.kind == "code" and "yaml_block" in s.meta for s in r.document.segments), r.document.segments
        got = yaml.safe_load(r.text)  # the mark is a comment: still YAML
        marks = [int(line.split(": ")[1].rstrip("]")) for line in r.text.splitlines() if line.startswith("# [YAML_KEYS: ")]
        assert marks and len(got) + sum(marks) == 6, r.text
    # `odcf compress FILE` names the source after the file
    from odcf.cli.main import main
    path = tmp_path / "export.yaml"
    path.write_text(JOB, encoding="utf-8")
    assert main(["compress", str(path), "--query", query, "--budget", "40", "--no-annotate"]) == 0
    out = capsys.readouterr().out
    assert "# [YAML_KEYS: " in out, out
    # not declared: lines whose keys mostly hold a sentence stay prose (a transcript's "Name: sentence" lines)
    r = c.compress([Source(id="notes.txt", text=JOB)], query=query, budget=40, annotate=False, timings=False)
    assert "YAML_" not in r.text and not any("yaml_block" in s.meta for s in r.document.segments)


SPEC = """\
openapi: 3.0.3
info:
  title: Parcel API
  version: 2.4.1
paths:
  /parcels/{trackingId}:
    get:
      summary: Get a parcel
      responses:
        '200':
          description: The parcel
        '404':
          description: No such parcel
  /parcels/{trackingId}/redirect:
    post:
      summary: Redirect a parcel
      description: Only while status is IN_TRANSIT.
      parameters:
        - name: limit
          in: query
          schema:
            type: integer
            default: 20
      responses:
        '202':
          description: Redirect accepted
        '409':
          description: Parcel is not IN_TRANSIT
  GET /legacy (v1):
    deprecated: true
    description: Removed on 2025-01-31.
  "GET /x (v2)":
    deprecated: false
"""


def _marked(text, loaded, original):
    """Each "# [YAML_KEYS: n]" mark of *text* checked against the keys left out of its mapping."""
    stack = []
    for line in text.splitlines():
        ind = len(line) - len(line.lstrip())
        if line.lstrip().startswith("# [YAML_KEYS: "):
            while stack and stack[-1][0] >= ind:
                stack.pop()
            o, d = original, loaded
            for _, key in stack:
                o, d = o[key], d[key]
            assert len(o) - len(d) == int(line.split(": ")[1].rstrip("]")), (line, text)
        elif line.strip() and not line.lstrip().startswith(("#", "- ")) and ind < 8:
            while stack and stack[-1][0] >= ind:
                stack.pop()
            stack.append((ind, next(iter(yaml.safe_load(line.strip() + " 1" if line.rstrip().endswith(":")
                                                         else line.strip())))))


def test_keys_with_braces_and_parentheses_are_a_declared_specs_paths():
    # QA: "/parcels/{trackingId}/redirect:" was no key line (braces kept code out), so from the second
    # path on an OpenAPI spec was prose: "'202':" lost its indentation and "responses:", "[…5 items]"
    # marks, and the output was no YAML
    c = Compressor.from_ontology("general")
    original = yaml.safe_load(SPEC)
    query = "when can a parcel be redirected and what errors can redirect return"
    for budget in (40, 80, 120, 200):
        r = c.compress([Source(id="api/openapi.yaml", text=SPEC)], query=query, budget=budget, annotate=False,
                       timings=False)
        assert all(s.kind == "code" and "yaml_block" in s.meta for s in r.document.segments), r.document.segments
        loaded = yaml.safe_load(r.text)
        assert "[…" not in r.text, r.text
        _marked(r.text, loaded, original)
        if "'409':" in r.text:
            assert loaded["paths"]["/parcels/{trackingId}/redirect"]["post"]["responses"]["409"], r.text
    segs = Segmenter()(Document.from_sources([Source(id="openapi.yml", text=SPEC)]), Plan(domain="t")).segments
    by_text = {s.text.strip(): s for s in segs}
    path = by_text["/parcels/{trackingId}/redirect:"]
    assert by_text["'409':"].meta["yaml_path"][:2] == [by_text["paths:"].index, path.index]
    assert by_text["default: 20"].meta["under"] == by_text["schema:"].index  # a key, not a "default:" statement
    assert by_text["deprecated: true"].meta["under"] == by_text["GET /legacy (v1):"].index
    assert by_text['deprecated: false'].meta["under"] == by_text['"GET /x (v2)":'].index
    # in text not declared YAML (a tool's output), a path's "{id}" is a key too; code is still no YAML
    tool = "\n".join(SPEC.splitlines()[:18]) + "\n"
    segs = Segmenter()(Document.from_sources([Source(id="t", text=tool)]), Plan(domain="t")).segments
    assert all("yaml_block" in s.meta for s in segs), segs
    for text in ("if (x):\n    y = 1\n    z = 2\nelse:\n    y = 3\n", "a = b:\n  c: 1\n  d: 2\n  e: 3\n"):
        segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
        assert not any("yaml_block" in s.meta for s in segs), text

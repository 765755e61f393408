"""With no query, a log's ERROR entries and their exceptions rank above its WARN lines, and those above
its INFO and DEBUG lines (odcf.stages.rank.rank_log_levels); with a query, its relevance leads."""
import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.pipeline import Pipeline
from odcf.plan.model import Plan, RerankQuery, RoleContract
from odcf.stages.protect import Protector
from odcf.stages.rank import LexicalRanker
from odcf.stages.rerank import EmbeddingReranker
from odcf.stages.segment import Segmenter

ERROR_1 = ("2025-06-02 14:21:07,318 ERROR [grpc-exec-4] o.s.inventory.ReserveHandler: reserve failed for "
           "order=ord_55120 sku=SKU-7731")
EXC_1 = "org.redisson.client.RedisTimeoutException: Command execution timeout for command: EVAL, after 3000 ms"
ERROR_2 = ("2025-06-02 14:24:51,006 ERROR [grpc-exec-9] o.s.inventory.ReserveHandler: reserve failed for "
           "order=ord_55187 sku=SKU-1290")
EXC_2 = "java.lang.IllegalArgumentException: quantity -2 out of range"
WARN = ("2025-06-02 14:21:09,552 WARN  [redisson-netty-2] o.r.c.h.CommandPubSubDecoder: 1 channel(s) "
        "idle for 60000 ms")
# routine lines dense in figures: scored on their share of figures alone, they outrank the errors
INFO = [f"2025-06-02 14:2{k}:0{k},1{k}0 INFO  [scheduler-{k}] o.s.inventory.Stats: stock sync {k}/12 done "
        f"skus=1{k}42 reserved=3{k}8 free=9{k}1 took={k}40 ms" for k in range(8)]
LOG = "\n".join([
    *INFO[:2], ERROR_1, EXC_1,
    *(f"\tat org.redisson.command.CommandAsyncService.get{k}(CommandAsyncService.java:{180 + k})" for k in range(6)),
    "Caused by: io.netty.handler.timeout.ReadTimeoutException: null",
    "\tat io.netty.handler.timeout.ReadTimeoutHandler.readTimedOut(ReadTimeoutHandler.java:98)",
    "\t... 12 more",
    WARN, *INFO[2:5], ERROR_2, EXC_2,
    "\tat com.example.inventory.Reservation.<init>(Reservation.java:41)",
    "\tat com.example.inventory.ReserveHandler.handle(ReserveHandler.java:77)",
    *INFO[5:]])
PLAN = Plan(domain="t", queries=(RerankQuery("status", "status of the service and its operations"),),
            roles={"default": RoleContract("default", 400)})


def ranked(query=None):
    doc = Document.from_sources([Source(id="app.log", text=LOG)], query=query)
    stages = [Segmenter(), Protector(), LexicalRanker(), EmbeddingReranker(embedder="hash", first_pass="lexical")]
    return Pipeline(stages).run(doc, PLAN)


def test_with_no_query_a_logs_errors_and_their_exceptions_rank_above_its_routine_lines():
    # QA: "odcf compress app.log -b 240" delivered four INFO lines ("POST /v2/charges …", "db pool active=40 …",
    # scored 0.86-1.0) and left out both ERROR lines and their exceptions (0.40-0.57)
    doc = ranked()
    segs = [s for s in doc.segments if not s.dropped]

    def scores(*starts):
        return [s.score for s in segs if s.text.startswith(starts)]

    errors = scores(ERROR_1, ERROR_2, EXC_1, EXC_2, "Caused by:")
    warns = scores(WARN)
    frames = scores("\tat ")  # the parts of the traces that hold only frames
    routine = scores(*INFO)
    assert len(errors) + len(warns) + len(frames) + len(routine) == len(segs), [s.text[:40] for s in segs]
    assert errors and warns and frames and len(routine) == len(INFO)
    assert min(errors) > max(warns) and min(warns) > max(frames) and min(frames) > max(routine)
    # each ERROR line first, then its exception (the part right under it), then a "Caused by:"
    lines = [s for s in segs if s.text.startswith((ERROR_1, ERROR_2))]
    excs = [s for s in segs if s.text.startswith((EXC_1, EXC_2))]
    cause = next(s for s in segs if s.text.startswith("Caused by:"))
    assert min(s.score for s in lines) > max(s.score for s in excs) > min(s.score for s in excs) > cause.score


@pytest.mark.parametrize("budget", [140, 300])
def test_with_no_query_a_small_budget_delivers_the_errors_not_the_routine_lines(budget):
    r = Compressor.from_ontology("general").compress([Source(id="app.log", text=LOG)], budget=budget, timings=False)
    assert ERROR_1 in r.text and ERROR_2 in r.text, r.text
    assert not any(line in r.text for line in INFO), r.text
    if budget >= 300:
        assert EXC_1 in r.text and EXC_2 in r.text, r.text
    # what the level did is said: each routine line left out gives its level as a reason
    reasons = {g["id"]: g.get("reason") or "" for s in r.record["sources"] for g in s["segments"]}
    info = [why for why in reasons.values() if "rank: a log entry at level INFO" in why]
    assert len(info) == len(INFO) and all("budget:" in why for why in info), reasons


def test_with_a_query_its_relevance_leads_and_no_level_reason_is_given():
    query = "how long did stock sync 6/12 take?"
    r = Compressor.from_ontology("general").compress([Source(id="app.log", text=LOG)], query=query, budget=120,
                                                     timings=False)
    assert INFO[6] in r.text, r.text
    assert not any("rank: a log entry" in (g.get("reason") or "") for s in r.record["sources"] for g in s["segments"])

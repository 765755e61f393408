"""Application logs in the segmenter: an entry a piece, its stack trace in whole lines."""
import re

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t")

INFO = [f"2025-03-11 10:0{k}:00,{k:03d} INFO  [exec-{k}] c.a.payments.web.CheckoutController: checkout ok "
        f"order ord_90115{k} amount={k}9.90 EUR" for k in range(6)]
ERROR = ("2025-03-11 10:00:33,561 ERROR [scheduler-1] c.a.payments.jobs.SettlementJob: settlement batch 88412 "
         "failed after 33558 ms; 0 of 4,211 transactions settled; batch will NOT be retried automatically")
# logback's layout: the trace right under its line, no blank line; a ";" in the exception's message
TRACE = ("org.springframework.dao.DataAccessResourceFailureException: Unable to acquire JDBC Connection; "
         "nested exception is org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC Connection\n"
         + "".join(f"\tat org.springframework.orm.jpa.JpaTransactionManager.doBegin{k}(JpaTransactionManager.java:"
                   f"{460 + k})\n" for k in range(5))
         + "Caused by: org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC Connection\n"
         "\tat org.hibernate.exception.internal.SQLStateConversionDelegate.convert(SQLStateConversionDelegate.java:112)\n"
         "\t... 14 more\n"
         "Caused by: org.postgresql.util.PSQLException: FATAL: remaining connection slots are reserved\n"
         "\tat org.postgresql.core.v3.ConnectionFactoryImpl.doAuthentication(ConnectionFactoryImpl.java:693)\n"
         "\t... 22 more")
LOG = "\n".join(INFO[:3] + [ERROR, TRACE] + INFO[3:])


def seg(text, **kw):
    doc = Document.from_sources([Source(id="a", text=text, kind="text", layer="fact")])
    return Segmenter(**kw)(doc, PLAN).segments


def test_a_log_is_cut_an_entry_a_piece_and_its_trace_in_whole_lines_never_at_its_semicolons():
    # QA: the trace under an ERROR line (no blank line) was prose, cut at the ";" of its message and at
    # "... 14 more" ("… 22 more", a bare "22 more" delivered), and the log lines around it were one block
    # of 344 tokens: the ERROR line that answers the query never fit a small budget
    out = seg(LOG)
    assert "".join(s.sep + s.text for s in out) == LOG
    lines = LOG.split("\n")
    for s in out:  # whole lines, each as in the source (a frame keeps its tab)
        start = LOG.index(s.text)
        assert LOG[start - 1:start] in ("\n", "") and LOG[start + len(s.text):][:1] in ("\n", ""), s.text
        assert all(line in lines for line in s.text.split("\n")), s.text
    log_lines = [s for s in out if s.text[:4] == "2025"]
    assert [s.text for s in log_lines] == INFO[:3] + [ERROR] + INFO[3:]  # each entry's line a piece of its own
    assert all(s.kind == "list" for s in log_lines) and {s.kind for s in out if s not in log_lines} == {"code"}
    assert [s.text.split("\n")[0] for s in out if s.text.startswith("Caused by:")] == [
        "Caused by: org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC Connection",
        "Caused by: org.postgresql.util.PSQLException: FATAL: remaining connection slots are reserved"]
    # the ERROR line delivered alone: the lines left out around it counted, as for a part of code
    error = next(s for s in out if s.text == ERROR)
    assert join_segments([error]) == f"[CODE_LINES: 3]\n{ERROR}\n[CODE_LINES: {len(lines) - 4}]"


def test_the_error_line_of_a_log_fits_a_small_budget_and_no_line_is_delivered_cut():
    text = "Tool output: tail -n 40 /var/log/payments-api/app.log\n\n" + LOG + "\n"
    for budget in (90, 150, 300):
        r = Compressor.from_ontology("general").compress(
            [{"id": "log", "text": text}], query="Why did settlement batch 88412 fail and was it retried?",
            budget=budget, timings=False)
        assert ERROR in r.text, (budget, r.text)
        body = r.text.split("\n", 1)[1]  # under the source's header line
        for line in body.split("\n"):
            assert not line.strip() or line in text.split("\n") or re.fullmatch(r"\[CODE_LINES: \d+\]", line), line


def test_a_python_traceback_under_its_log_line_and_a_long_run_of_log_lines():
    text = ("2025-03-11 10:00:01,002 INFO app.import: reading rows.csv\n"
            "2025-03-11 10:00:02,417 ERROR app.import: import of rows.csv failed; 0 of 912 rows stored\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/app/importer.py", line 88, in load\n'
            "    row = parse(line)\n"
            "ValueError: bad amount in row 17; expected a number. Not retried.\n"
            "2025-03-11 10:00:02,420 INFO app.import: done\n")
    out = seg(text)
    # over max_code_tokens, the entry is its line, then its traceback in whole lines
    assert [s.text for s in out] == [
        "2025-03-11 10:00:01,002 INFO app.import: reading rows.csv",
        "2025-03-11 10:00:02,417 ERROR app.import: import of rows.csv failed; 0 of 912 rows stored",
        ("Traceback (most recent call last):\n"
         '  File "/srv/app/importer.py", line 88, in load\n'
         "    row = parse(line)\n"
         "ValueError: bad amount in row 17; expected a number. Not retried."),
        "2025-03-11 10:00:02,420 INFO app.import: done"]
    # a long log is no block of 40 lines: a piece a line, for the query to pick the one it needs
    log = "\n".join(f"2024-05-15 10:{k // 60:02d}:{k % 60:02d} INFO worker-3: request {k} handled" for k in range(200))
    assert [s.text for s in seg(log)] == log.split("\n")
    # one line of prose that opens with a date and time is no log
    assert [s.kind for s in seg("2025-03-11 10:00 The board met. It approved the budget.")] == ["sentence"] * 2


def test_a_part_of_a_stack_trace_goes_only_with_its_log_line_and_the_part_before_it():
    # a lone "\tat java.base/java.lang.Thread.run(…)" was delivered as filler at 132 tokens, with the
    # trace's earlier lines left out: a frame means nothing without its exception
    trace = TRACE.split("\n")
    reasons = set()
    for budget in range(40, 400, 12):
        r = Compressor(PLAN).compress(LOG, query="why did settlement batch 88412 fail?", budget=budget,
                                      annotate=False, timings=False)
        out = r.text.split("\n")
        frames = [k for k, line in enumerate(trace) if line in out]
        if frames:
            assert ERROR in out, (budget, r.text)
        for k in frames:  # a frame delivered: the line above it too, unless it opens a cause
            assert trace[k].startswith(("org.", "Caused by")) or trace[k - 1] in out or not trace[k].startswith("\t"), \
                (budget, trace[k], r.text)
        reasons |= {g["reason"].split(" (")[0] for g in r.record["sources"][0]["segments"] if g["reason"]
                    and "stack trace" in g["reason"]}
    assert reasons == {"budget: is a part of a stack trace and goes only with its log entry's line"}, reasons


def test_a_message_on_lines_of_its_own_is_its_entrys_and_every_line_left_out_is_counted():
    # QA: "slow query took 4210 ms:" then its SQL at the margin ended the log there: the SQL was prose and the
    # rest a second log, and at 59 tokens only "[CODE_LINES: 5]" and one line were delivered, the first 12
    # lines (the ERROR among them) gone with no mark
    sql = ("SELECT * FROM charges WHERE customer_id = 'cus_9921' AND status = 'failed'\n"
           "ORDER BY created_at DESC LIMIT 50")
    log = "\n".join(INFO[:2] + [ERROR, "java.lang.IllegalStateException: pool exhausted; giving up",
                                "\tat c.a.Pool.acquire(Pool.java:88)",
                                "2025-03-11 10:00:34,002 WARN  [http-8080-3] c.a.Api: slow query took 4210 ms:", sql]
                    + INFO[2:4] + [""] + INFO[4:])  # a blank line between two entries: still the log
    lines = log.split("\n")
    out = seg(log)
    assert [s.text for s in out if "slow query" in s.text or "SELECT" in s.text][-1].endswith("LIMIT 50")
    assert {s.paragraph for s in out} == {out[0].paragraph}  # one log, the SQL and the blank line in it
    for budget in range(30, 420, 9):
        r = Compressor(PLAN).compress(log, query="why did batch 88412 fail and which query was slow?",
                                      budget=budget, annotate=False, timings=False)
        at = 0  # read the delivery against the log: each line in its place, each mark the lines left out there
        for line in r.text.split("\n") if r.text else lines:
            mark = re.fullmatch(r"\[CODE_LINES: (\d+)\]", line)
            if mark:
                at += int(mark.group(1))
            else:
                assert at < len(lines) and line == lines[at], (budget, line, r.text)
                at += 1
        assert at == len(lines), (budget, r.text)


def test_notes_whose_lines_open_with_a_date_and_a_time_are_no_log():
    # QA: site-visit minutes ("2025-03-11 09:40 Inspection of pier 3 …") were cut as a log, with [CODE_LINES]
    # marks, and "Decision: do not load pier 3 …" held with the rebar line above it was left out at 150 tokens
    minutes = ("# Site visit — Bridge 14\n\n"
               "2025-03-11 09:00 Arrival on site. Weather dry, 6 C.\n"
               "  Attendees: R. Osei (client), M. Novak (contractor), J. Park (engineer).\n"
               "2025-03-11 09:40 Inspection of pier 3. Spalling found on the north face, about 0.8 m2.\n"
               "  Rebar exposed at two locations; section loss estimated under 10%.\n"
               "  Decision: do not load pier 3 above 60% of design load until repairs are done.\n"
               "2025-03-11 15:00 Departure.\n")
    out = seg(minutes)
    assert not any("code_lines" in s.meta for s in out)
    assert "  Decision: do not load pier 3 above 60% of design load until repairs are done." in [s.text for s in out]
    # a machine's stamp (seconds, or a level after the minute) still opens a log's entry
    for log in ("2025-03-11 09:00:01 Arrival\n2025-03-11 09:40:12 Inspection",
                "2025-03-11 09:00 INFO boot\n2025-03-11 09:40 WARN [main] slow"):
        assert [s.kind for s in seg(log)] == ["list", "list"] and all("code_lines" in s.meta for s in seg(log)), log

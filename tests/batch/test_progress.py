"""Progress: a rich bar only when asked or on a terminal; log lines otherwise; the summary's sums."""
from __future__ import annotations

import logging

from odcf.batch.progress import Progress
from odcf.batch.summary import BatchSummary


def test_bar_draws_on_request(capsys):
    p = Progress(total=10, already=2, enabled=True)
    p.update(3, tokens_in=300, tokens_out=100)
    p.close()
    err = capsys.readouterr().err
    assert "5/10" in err and "200 tokens saved" in err


def test_quiet_without_a_terminal_logs_instead(capsys, caplog):
    with caplog.at_level(logging.INFO, logger="odcf.batch.progress"):
        p = Progress(total=4, enabled=None, log_every=0.0)  # pytest's stderr is not a terminal
        p.update(2, tokens_in=50, tokens_out=20)
        p.close()
    assert capsys.readouterr().err == ""
    assert "2/4 records" in caplog.text and "30 tokens saved" in caplog.text


def test_summary_lines():
    s = BatchSummary(records_in=5, records_out=4, records_failed=1, tokens_in=1000, tokens_out=250,
                     seconds=2.0, output="o.jsonl", errors="o.jsonl.errors.jsonl", resumed_records=1)
    assert s.processed == 4 and s.tokens_saved == 750 and not s.ok
    text = "\n".join(s.lines())
    assert "5 in, 4 out, 1 failed (1 finished by an earlier run)" in text
    assert "(25.0% of input), 750 saved" in text and "2.0 records/s" in text and "errors:  o.jsonl.errors.jsonl" in text
    assert s.to_dict()["tokens_saved"] == 750

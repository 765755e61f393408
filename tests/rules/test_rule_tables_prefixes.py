"""Table folding and list-prefix folding at the text level."""
from __future__ import annotations

from odcf.rules.prefixes import fold_prefixes, unfold_prefixes
from odcf.rules.tables import fold_table, split_table

MD = "| id | v |\n|---|---|\n" + "\n".join(f"| r{i} | {i} |" for i in range(1, 21))


def test_small_table_is_not_folded():
    small = "| id | v |\n|---|---|\n" + "\n".join(f"| r{i} | {i} |" for i in range(8))
    assert fold_table(small, lambda s, e, t: False) is None


def test_markdown_table_head_tail_and_count():
    out, stats = fold_table(MD, lambda s, e, t: False)
    assert out == "| id | v |\n|---|---|\n| r1 | 1 |\n| r2 | 2 |\n[DATA_ROWS: 17]\n| r20 | 20 |"
    assert stats == {"rows": 20, "kept": 3, "omitted": 17, "gaps": 1}


def test_kept_rows_split_gaps_and_options():
    out, stats = fold_table(MD, lambda s, e, t: t in ("| r10 | 10 |", "| r11 | 11 |"), head_rows=1, tail_rows=2)
    assert out.split("\n")[2:] == ["| r1 | 1 |", "[DATA_ROWS: 8]", "| r10 | 10 |", "| r11 | 11 |",
                                   "[DATA_ROWS: 7]", "| r19 | 19 |", "| r20 | 20 |"]
    assert stats["gaps"] == 2 and stats["omitted"] == 15


def test_keep_gets_offsets_of_the_row():
    seen = []
    fold_table(MD, lambda s, e, t: seen.append(MD[s:e] == t) or False)
    assert seen and all(seen)


def test_csv_with_multiline_quoted_field_counts_records():
    csv = "name,note\n" + "\n".join(f'n{i},"line one\nline two"' if i == 3 else f"n{i},x" for i in range(12))
    out, stats = fold_table(csv, lambda s, e, t: "n3," in t)
    assert stats["rows"] == 12
    assert 'n3,"line one\nline two"' in out
    assert out.startswith("name,note\nn0,x\nn1,x\n[DATA_ROWS: 1]\n")


def test_folding_twice_changes_nothing_more_and_counts_merge():
    once, _ = fold_table(MD, lambda s, e, t: "r9 " in t)
    assert fold_table(once, lambda s, e, t: "r9 " in t) is None
    # a later fold that keeps fewer rows merges its gap with the existing markers
    twice, stats = fold_table(once, lambda s, e, t: False)
    assert twice.endswith("| r2 | 2 |\n[DATA_ROWS: 17]\n| r20 | 20 |") and stats["omitted"] == 17
    header_end, items = split_table(twice)
    assert sum(it.gap for it in items) == 17


LOG = "\n".join(f"2024-05-01 12:30:{i:02d} INFO payments.api: charge ch_{i:04d} ok" for i in range(6))


def test_prefix_fold_is_lossless():
    text = "start\n" + LOG + "\nend\n" + LOG.replace("INFO", "WARN")
    out, stats = fold_prefixes(text)
    assert out.count("[PREFIX: ") == 2
    assert "[PREFIX: 2024-05-01 12:30:]" in out
    assert stats["runs"] == 2 and stats["lines"] == 12
    assert unfold_prefixes(out) == text
    assert len(out) < len(text)


def test_prefix_fold_respects_thresholds():
    short = "\n".join(f"ab:{i} x" for i in range(10))
    assert fold_prefixes(short)[0] == short
    three = "\n".join(LOG.split("\n")[:3])
    assert fold_prefixes(three)[0] == three
    assert fold_prefixes(three, min_lines=3)[0] != three


def test_prefix_never_ends_inside_a_word():
    text = "\n".join(f'"user_id": "customer_{i}abc",' for i in range(5))
    out, _ = fold_prefixes(text)
    assert out.split("\n")[0] == '[PREFIX: "user_id": "]'
    assert unfold_prefixes(out) == text


def test_prefix_never_cuts_a_protected_span():
    lines = LOG.split("\n")
    # protect the full timestamp of the third line: the prefix must stop before it
    start = len(lines[0]) + 1 + len(lines[1]) + 1
    out, _ = fold_prefixes(LOG, spans=[(start, start + 19)])
    assert "2024-05-01 12:30:02" in out
    assert unfold_prefixes(out) == LOG


def test_prefix_folding_twice_changes_nothing_more():
    text = "\n".join(f"2024-05-01 12:30:00 INFO very.long.logger.name.here: item {i}" for i in range(6)) + "\nx"
    once, _ = fold_prefixes(text)
    assert fold_prefixes(once) == (once, {"runs": 0, "lines": 0, "chars_saved": 0, "repeats": 0, "repeated": 0})
    assert unfold_prefixes(once) == text


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HEADS = ["2024-05-01 12:30:00 INFO api: ", '"user_id": "', "- [ok] worker.pool.main ", "x", "", "aaaaaaaaaaaaaaaa", "x y"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(HEADS), st.sampled_from(["a", "b 1", "", "zz", " c"])), max_size=30),
       st.integers(2, 6), st.integers(1, 20))
def test_property_prefix_fold_lossless_and_idempotent(lines, min_lines, min_chars):
    text = "\n".join(p + s for p, s in lines)
    out, _ = fold_prefixes(text, min_lines=min_lines, min_chars=min_chars)
    assert unfold_prefixes(out) == text
    assert fold_prefixes(out, min_lines=min_lines, min_chars=min_chars)[0] == out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["| a | 1 |", "| b | 2 |", "| c | $5 |", "[DATA_ROWS: 3]"]), max_size=30),
       st.integers(0, 10), st.integers(0, 3), st.integers(0, 3))
def test_property_table_fold_keeps_wanted_rows_and_is_idempotent(rows, max_rows, head, tail):
    text = "| h | v |\n|---|---|\n" + "\n".join(rows)
    keep = lambda s, e, t: "$5" in t  # noqa: E731
    result = fold_table(text, keep, max_rows=max_rows, head_rows=head, tail_rows=tail)
    if result is None:
        return
    out, stats = result
    assert out.count("| c | $5 |") == text.count("| c | $5 |")
    assert stats["rows"] == stats["kept"] + stats["omitted"]
    again = fold_table(out, keep, max_rows=max_rows, head_rows=head, tail_rows=tail)
    assert again is None or again[0] == out


def test_identical_lines_are_written_once_with_their_count_never_as_a_prefix_over_empty_lines():
    # QA s29/qa3 #7: 20 identical lines became '[PREFIX: the whole line]' and empty lines, called lossless
    line = "Section 9.1 责任上限为 $250,000，不得超过。 👍🏽 é"
    text = "intro\n" + "\n".join([line] * 20) + "\nSection 9.1 ends"
    out, stats = fold_prefixes(text)
    assert out == f"intro\n[REPEAT ×20: {line}]\nSection 9.1 ends"
    assert (stats["runs"], stats["lines"], stats["repeats"], stats["repeated"]) == (1, 20, 1, 20)
    assert unfold_prefixes(out) == text and fold_prefixes(out)[0] == out
    # a run in which one line is all prefix is left alone rather than folded into an empty line
    mixed = "\n".join(["2024-05-01 12:30 INFO api:"] + [f"2024-05-01 12:30 INFO api: call {i}" for i in range(5)])
    out = fold_prefixes(mixed)[0]
    assert out.split("\n")[:2] == ["2024-05-01 12:30 INFO api:", "[PREFIX: 2024-05-01 12:30 INFO api: call ]"]
    assert "" not in out.split("\n") and unfold_prefixes(out) == mixed


def test_two_repeat_lines_in_a_row_are_not_folded_again_under_their_shared_prefix():
    # hypothesis (s29): '[REPEAT ×2: "user_id": "a]' over '[REPEAT ×2: 2024-05-01 …]' became '[PREFIX: [REPEAT ×2: ]' on a
    # second fold: folding was not idempotent
    text = "\n".join(['"user_id": "a'] * 2 + ["2024-05-01 12:30:00 INFO api: a"] * 2)
    once, _ = fold_prefixes(text, min_lines=2, min_chars=1)
    assert once.splitlines() == ['[REPEAT ×2: "user_id": "a]', "[REPEAT ×2: 2024-05-01 12:30:00 INFO api: a]"]
    assert fold_prefixes(once, min_lines=2, min_chars=1)[0] == once and unfold_prefixes(once) == text

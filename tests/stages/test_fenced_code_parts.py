"""A long fenced code block is cut as a source file is: parts ending at blank lines where they can, and a
function's header with its body (QA s32 R3: a part ended in "def should_retry(status: int, attempt: int)
-> bool:" after the tail of the function above, two blank lines before it, so that its body was delivered
under ``[CODE_LINES: 8]`` without the function it belongs to)."""
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t")

CODE = '''def backoff_delay(attempt_number: int, base_seconds: float = 0.25, cap_seconds: float = 16.0) -> float:
    """The delay in seconds before the retry numbered `attempt_number`, with full jitter."""
    ceiling = min(cap_seconds, base_seconds * (2 ** attempt_number))
    spread = random.uniform(0, ceiling / 2)
    return ceiling / 2 + spread


def may_retry(http_status: int, attempt_number: int) -> bool:
    if attempt_number >= 6:
        return False
    return http_status in (408, 429, 502, 503, 504)'''


def _doc(code):
    return "## Retries\n\nThe client retries idempotent calls:\n\n```python\n" + code + "\n```\n\nThat is all.\n"


def _code(text):
    return [s for s in Segmenter()(Document.from_sources([Source(id="spec.md", text=text)]), PLAN).segments
            if s.kind == "code"]


def test_a_fenced_blocks_parts_end_at_blank_lines_and_a_function_opens_its_part():
    parts = _code(_doc(CODE))
    assert len(parts) > 1
    heads = [p for p in parts if "def may_retry" in p.text]
    assert len(heads) == 1 and heads[0].text.startswith("def may_retry") and "if attempt_number >= 6:" in heads[0].text
    assert not any(p.text.rstrip().endswith(":") for p in parts)  # no part ends in a block's header
    # delivered alone, inside its fences, with the lines before it counted
    alone = join_segments([heads[0]])
    assert alone.startswith("```python\n[CODE_LINES: 7]\ndef may_retry(") and alone.endswith("504)\n```")


def test_a_run_without_blank_lines_is_not_cut_under_a_header_line():
    # one run of lines longer than a part: a cut never leaves "def …:" or "if …:" at a part's end
    body = "\n".join(f"    def handler_{k}(self, request_payload, context_object):\n"
                     f"        return self.dispatch(request_payload, context_object, route_number={k})"
                     for k in range(8))
    parts = _code(_doc("class Router:\n" + body))
    assert len(parts) > 2
    for p in parts:
        last = p.text.rstrip().rsplit("\n", 1)[-1]
        assert not last.rstrip().endswith(":"), p.text
    assert "".join(s.sep + s.text for s in parts).lstrip("\n").startswith("```python\nclass Router:")

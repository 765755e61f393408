import pytest

from odcf.backends.ner import EXCLUDE, get_nlp, is_cjk, pipe


def test_is_cjk():
    assert is_cjk("合同第3.2条规定，乙方不得转让。")
    assert not is_cjk("The lessee shall pay 3% (三) monthly.")


@pytest.mark.slow
def test_nlp_loads_once_without_unused_components():
    nlp = get_nlp()
    assert get_nlp() is nlp
    assert not set(EXCLUDE) & set(nlp.pipe_names)
    assert {"parser", "ner"} <= set(nlp.pipe_names)


@pytest.mark.slow
def test_pipe_can_skip_the_parser():
    (doc,) = list(pipe(["Pay $5 by March 3, 2024."], parse=False))
    assert "March 3, 2024" in [e.text for e in doc.ents]
    assert not doc.has_annotation("DEP")

"""A correction that says what a value was ("(previously $40,000)", "not 40,000 EUR") corrects a segment that
holds that figure in that currency, not the same figure in another one: "$40,000" is no "€40,000". The same
currency written another way ("€40,000", "EUR 40,000", "40,000 euros") is the same value."""
import pytest

from odcf.document import Segment
from odcf.stages.rank import correction_links


def _links(texts):
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=i)
            for i, t in enumerate(texts)]
    return correction_links(segs)


QUOTES = ["The cabinet quote from KeukenPlus is {cab} including fitting.",
          "The worktop quote from StoneWorks is {top} with delivery.",
          "The site visit is on Tuesday at noon."]


@pytest.mark.parametrize(("cab", "top", "correction", "stale"), [
    ("$40,000", "€40,000", "Correction: the cabinet quote is now $42,500 (previously $40,000).", ["s0"]),
    ("EUR 40,000", "USD 40,000", "Correction: the worktop quote is now USD 42,500 (previously USD 40,000).", ["s1"]),
    ("40,000 GBP", "40,000 CHF", "Correction: the worktop quote is CHF 42,500, not 40,000 CHF.", ["s1"]),
])
def test_a_correction_corrects_the_figure_in_its_own_currency_only(cab, top, correction, stale) -> None:
    texts = [t.format(cab=cab, top=top) for t in QUOTES] + [correction]
    assert _links(texts) == {"s3": stale}


@pytest.mark.parametrize("written", ["€40,000", "EUR 40,000", "40,000 EUR", "40,000 euros", "40,000"])
def test_one_currency_written_another_way_is_the_same_value(written) -> None:
    texts = [f"The cabinet quote from KeukenPlus is {written} including fitting.", QUOTES[2],
             "Correction: the cabinet quote is EUR 42,500 (previously €40,000)."]
    assert _links(texts) == {"s2": ["s0"]}

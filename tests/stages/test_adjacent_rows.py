"""A table question about the row after (or before) one it names brings that row (QA 2, finding 7)."""
from odcf.compressor import Compressor

SUMMARY = ("The four heroes travel to a distant place, meet an old enemy, fall into a trap, escape it with "
           "the help of an unexpected ally and return home after a long and difficult struggle.")
# the row after and the row before share no word with the query; two others do
TITLES = ["Menace Of The Mole Men", "Diablo", "The Way It All Began", "Klaws", "The Red Ghost",
          "Where It All Began Again", "Prisoners Of Planet X", "The Long Way Back"]
TABLE = '"Eps #","Title","Summary"\n' + "".join(
    f'"{k + 1}","{title}","{SUMMARY}"\n' for k, title in enumerate(TITLES))


def _compress(query):
    # room for the header and two of the eight rows
    return Compressor.from_ontology("general").compress(
        [{"id": "episodes.csv", "text": TABLE}], query=query, budget=150, timings=False)


def test_the_row_after_the_named_row_comes_with_it():
    r = _compress('which episode was next after "the way it all began"?')
    assert '"The Way It All Began"' in r.text and '"Klaws"' in r.text
    assert '"Diablo"' not in r.text


def test_the_row_before_the_named_row_comes_with_it():
    r = _compress('which episode aired before "the way it all began"?')
    assert '"The Way It All Began"' in r.text and '"Diablo"' in r.text
    assert '"Klaws"' not in r.text

"""HTML → semantic text: body kept, chrome gone, structure as markdown."""
from __future__ import annotations

from odcf.rules.html import html_to_text, looks_like_html

PAGE = """<!DOCTYPE html>
<html><head><title>Site</title><style>p{color:red}</style><script>var x = "<p>not text</p>";</script></head>
<body class="has-sidebar">
<header class="site-header"><a href="/">Logo</a><ul><li>Home</li><li>World</li></ul></header>
<nav><a href="/a">Section A</a></nav>
<div id="cookie-banner">We use cookies to improve your experience.</div>
<main>
<article>
<header><h1>Rates rise &amp; markets fall</h1></header>
<p>The central bank raised rates by <b>0.5%</b> on   Tuesday,
   the <a href="https://example.com/report">third rise</a> this year.</p>
<p>See <a href="https://example.com/x">https://example.com/x</a> for details.</p>
<h2>Key figures</h2>
<table><thead><tr><th>Year</th><th>Rate | %</th></tr></thead>
<tbody><tr><td>2023</td><td>4.5</td></tr><tr><td>2024</td><td colspan="1">5.0</td></tr></tbody></table>
<ul><li>Inflation: 3.1%</li><li>Jobs: <em>steady</em><ul><li>nested item</li></ul></li></ul>
<ol start="3"><li>third</li><li>fourth</li></ol>
<pre><code class="language-python">def f(x):
    return x &lt; 2
</code></pre>
<div class="share-buttons"><a>Facebook</a><a>Twitter</a></div>
<p>Share this article</p>
<aside>Related: other news</aside>
<!-- an html comment -->
<div style="display: none">hidden promo text</div>
</article>
<div class="comments"><p>Great article!</p></div>
</main>
<footer><p>Copyright 2024 Example News</p></footer>
<iframe src="ad.html"></iframe><svg><text>icon</text></svg><noscript>enable js</noscript>
<form><input name="q"><button>Search</button></form>
</body></html>"""


def test_body_kept_chrome_gone():
    text, report = html_to_text(PAGE)
    for kept in ("# Rates rise & markets fall", "raised rates by 0.5% on Tuesday, the third rise this year.",
                 "## Key figures", "Inflation: 3.1%"):
        assert kept in text
    for gone in ("Logo", "Section A", "cookies", "Facebook", "Share this", "other news", "Great article",
                 "Copyright", "icon", "enable js", "Search", "hidden promo", "color:red", "not text",
                 "an html comment", "https://example.com/report", "Site"):
        assert gone not in text, gone
    dropped = report["dropped"]
    assert dropped["tag:nav"] == 1 and dropped["tag:footer"] == 1 and dropped["tag:aside"] == 1
    assert dropped["text:chrome"] == 1 and dropped["hidden"] == 1
    assert any(k.startswith("class:share") for k in dropped) and any(k.startswith("class:comment") for k in dropped)
    assert any(k.startswith("id:cookie") for k in dropped)


def test_link_text_that_is_the_url_is_kept():
    text, _ = html_to_text(PAGE)
    assert "See https://example.com/x for details." in text


def test_table_becomes_pipe_table_with_escaped_pipes():
    text, report = html_to_text(PAGE)
    assert "| Year | Rate \\| % |\n|---|---|\n| 2023 | 4.5 |\n| 2024 | 5.0 |" in text
    assert report["tables"] == 1


def test_lists_headings_and_code():
    text, report = html_to_text(PAGE)
    assert "- Inflation: 3.1%\n- Jobs: steady\n  - nested item" in text
    assert "3. third\n4. fourth" in text
    assert "```python\ndef f(x):\n    return x < 2\n```" in text
    assert report["headings"] == 2 and report["code_blocks"] == 1 and report["lists"] >= 2


def test_paragraphs_separated_by_blank_lines_and_whitespace_collapsed():
    text, _ = html_to_text("<p>one\n\n  two</p><div>three&nbsp;&nbsp;four</div><p>five<br>six</p>")
    assert text == "one two\n\nthree four\n\nfive\nsix"


def test_wrapper_with_chrome_class_holding_the_page_is_kept():
    html = '<body><div class="page-with-sidebar"><p>' + "Long body text. " * 20 + "</p></div>" \
           '<div class="sidebar"><p>side</p></div></body>'
    text, report = html_to_text(html)
    assert "Long body text." in text and "side" not in text
    assert report["dropped"] == {"class:sidebar": 1}


def test_header_inside_article_is_content_outside_is_chrome():
    text, _ = html_to_text("<header>Site name</header><article><header><h1>Title</h1></header><p>x</p></article>")
    assert text == "# Title\n\nx"


def test_malformed_markup_does_not_raise():
    text, _ = html_to_text("<p>a<p>b<li>c</div></span><td>d<table><tr><td>e")
    assert "a" in text and "b" in text and "e" in text


def test_deep_nesting_is_handled():
    text, _ = html_to_text("<div>" * 3000 + "deep" + "</div>" * 3000)
    assert text == "deep"


def test_looks_like_html():
    assert looks_like_html("  <!doctype html><html><body>x</body></html>")
    assert looks_like_html("<html lang='en'>")
    assert not looks_like_html("Use <b>bold</b> for emphasis.")
    assert not looks_like_html('{"html": "<p>x</p>"}')
    assert not looks_like_html('{"page": "<html><body>x</body></html>"}')
    assert looks_like_html("<?xml version='1.0'?>\n<html><body>x</body></html>")


def test_chrome_sections_and_share_lists_are_dropped():
    html = ("<article><p>Body text here.</p><ul><li>Facebook</li><li>Twitter</li><li>Email</li></ul>"
            "<h2>Most Popular</h2><ul><li>Other story</li><li>Another</li></ul>"
            "<h2>Analysis</h2><p>More body.</p><ul><li>Facebook shares fell 3%</li></ul></article>")
    text, report = html_to_text(html)
    assert text == "Body text here.\n\n## Analysis\n\nMore body.\n\n- Facebook shares fell 3%"
    assert report["dropped"] == {"text:chrome_section": 2, "text:share_list": 1}


def test_layout_classes_and_embeds_are_not_chrome():
    html = ('<body><div class="page-content and-w-sidebar"><h1>T</h1><p>story</p>'
            '<div class="social-media-embed"><blockquote class="twitter-tweet"><p>quoted tweet</p></blockquote></div>'
            '</div><div class="sidebar">side</div>' + "<p>filler</p>" * 30 + "</body>")
    text, _ = html_to_text(html)
    assert "story" in text and "quoted tweet" in text and "side" not in text


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PIECES = ["<p>", "</p>", "<div class='share'>", "<div>", "</div>", "<table>", "<tr>", "<td>", "<th>", "</table>",
          "<ul>", "<li>", "</ul>", "<ol start='x'>", "<pre>", "</pre>", "<script>secret()", "</script>", "<br>",
          "<h2>", "</h2>", "<a href='u'>", "</a>", "&amp;", "&#x27;", "text", "$5,000", " ", "\n", "<!-- c -->",
          "<td colspan='99999'>", "<blockquote>", "</blockquote>", "<code>", "</code>", "|", "<article>", "<nav>"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_property_any_markup_converts_deterministically(html):
    text, report = html_to_text(html)
    assert html_to_text(html) == (text, report)
    assert "secret()" not in text and "<!--" not in text
    assert report["chars_out"] == len(text)


def test_header_by_class_is_chrome_outside_an_article_only():
    html = ('<div id="full-header"><span>Brand</span></div><div class="site-masthead">Topics</div>'
            '<article><div class="entry-header"><p>Kicker</p></div><p>Body.</p></article>')
    text, report = html_to_text(html)
    assert text == "Kicker\n\nBody."
    assert report["dropped"] == {"class:masthead": 1, "id:header": 1}


def test_lists_of_links_are_dropped_lists_of_text_are_kept():
    html = ("<p>" + "Body sentence. " * 20 + "</p>"
            "<ul><li><a href='/a'>Another story</a></li><li><a href='/b'>Second story</a></li>"
            "<li><a href='/c'>Third story</a></li></ul>"
            "<ul><li>Point one, see <a href='/x'>x</a></li><li>Point two</li><li>Point three</li></ul>")
    text, report = html_to_text(html)
    assert "Another story" not in text and "- Point one, see x\n- Point two\n- Point three" in text
    assert report["dropped"] == {"links:list": 1}


def test_story_card_lists_are_dropped():
    cards = "".join(f"<li><h4>Headline {i}</h4><span>{i} hours ago</span></li>" for i in range(4))
    text, report = html_to_text(f"<p>Body.</p><ul>{cards}</ul><ul><li><h4>Only one heading</h4></li><li>a</li><li>b</li></ul>")
    assert "Headline" not in text and "#### Only one heading" in text
    assert report["dropped"] == {"text:teaser_list": 1}


def test_superscripts_and_subscripts_do_not_run_into_the_number_before_them():
    text, _ = html_to_text("<html><body><p>See Section 4.2<sup>3</sup>, a rate of 10<sup>-6</sup> per m<sup>2</sup>, "
                           "H<sub>2</sub>O, a note<sup>[7]</sup> and x<sup> </sup>y.</p></body></html>")
    assert text == "See Section 4.2^3, a rate of 10^(-6) per m^2, H_2O, a note[7] and x y."


def test_rowspan_cells_fill_their_column_below_so_values_stay_under_their_header():
    text, _ = html_to_text(
        "<html><body><table><tr><th>Param</th><th>Value</th><th>Unit</th></tr>"
        "<tr><td rowspan=2>Temp</td><td>-20</td><td>°C</td></tr><tr><td>+60</td><td>°C</td></tr>"
        "<tr><td>A</td><td>1</td><td rowspan='3'>kg</td></tr><tr><td>B</td><td>2</td></tr>"
        "</table></body></html>")
    assert text.splitlines()[2:] == ["| Temp | -20 | °C |", "| Temp | +60 | °C |", "| A | 1 | kg |", "| B | 2 | kg |"]


def test_a_definition_list_writes_each_term_with_its_definition_and_ol_type_keeps_its_letters():
    # QA (a privacy policy): <dt>/<dd> became separate blocks, so the budget delivered "Health Data",
    # "Account Data", … as bare words without what they mean; <ol type="a"> came out "1. 2. 3." while
    # the text cites "Section 5.2(b)"
    html = ("<html><body><h2>Definitions</h2><dl><dt>Health Data</dt><dd>Personal data concerning your "
            "<b>health</b>.</dd><dt>API</dt><dt>Interface</dt><dd>A published contract.</dd><dd>Also a port.</dd>"
            "<div><dt>Inactive Account</dt><dd>No sign-in for 24 months.</dd></div><dt>Orphan</dt></dl>"
            "<ol type=\"a\"><li>first</li><li>second</li></ol><ol type=\"i\" start=\"3\"><li>x</li><li>y</li></ol>"
            "<ol type=\"A\"><li>p</li></ol></body></html>")
    text, _ = html_to_text(html)
    assert text.split("\n\n") == [
        "## Definitions", "Health Data: Personal data concerning your health.", "API, Interface: A published contract.",
        "API, Interface: Also a port.", "Inactive Account: No sign-in for 24 months.", "Orphan",
        "a. first\nb. second", "iii. x\niv. y", "A. p"]

"""HTML page → semantic text: headings, paragraphs, lists, tables and code kept; chrome dropped.

Output is markdown-like: ``# Heading``, paragraphs separated by a blank line, ``- item`` /
``1. item`` lists, pipe tables (``| a | b |`` + ``|---|---|``), fenced ``<pre>`` blocks. Link
text is kept and URLs dropped. Dropped: script, style, noscript, nav, header (outside an
article), footer, aside, form, svg, iframe and similar elements; hidden elements; elements whose
class, id or role names navigation, menus, footers, sidebars, breadcrumbs, sharing, social
links, cookie banners, adverts, related items or comments; and short blocks whose whole text is
chrome ("Share this", "Subscribe ...", "We use cookies ..."). Only the stdlib parser is used.

>>> text, report = html_to_text("<nav>Home</nav><h1>Title</h1><p>Body &amp; more.</p>")
>>> print(text)
# Title
<BLANKLINE>
Body & more.
>>> report["dropped"]
{'tag:nav': 1}
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from odcf.rules.html_chrome import DROP_TAGS, attribute_reason, filter_blocks
from odcf.rules.html_tree import Element, holds, parse, raw_text

_BLOCK = frozenset(
    "address article aside blockquote body center dd details dialog div dl dt fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main nav ol p pre section summary "
    "table tbody td tfoot th thead tr ul caption legend".split()
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BR = "\x00"  # a <br> inside inline text, until the block is flushed
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")


class _Renderer:
    """Walks the tree and produces blocks of text; a sub-renderer renders a nested container."""

    def __init__(self, total: int, report: dict[str, Any], in_article: bool = False) -> None:
        # ``total``: text length of the page, or of the article/main element being rendered.
        self.total = total
        self.report = report
        self.in_article = in_article
        self.blocks: list[str] = []
        self._inline: list[str] = []

    # -- plumbing ------------------------------------------------------------
    def sub(self, el: Element, in_article: bool | None = None, total: int | None = None) -> list[str]:
        r = _Renderer(self.total if total is None else total, self.report,
                      self.in_article if in_article is None else in_article)
        r.walk(el)
        r.flush()
        return r.blocks

    def flush(self) -> None:
        if not self._inline:
            return
        raw = "".join(self._inline)
        self._inline = []
        lines = [_WS.sub(" ", piece).strip() for piece in raw.split(_BR)]
        text = "\n".join(line for line in lines if line)
        if text:
            self.blocks.append(text)

    def walk(self, el: Element) -> None:
        for child in el.children:
            if isinstance(child, str):
                self._inline.append(child)
            else:
                self.element(child)

    # -- decisions -----------------------------------------------------------
    def _drop_reason(self, el: Element) -> str | None:
        tag = el.tag
        if tag in DROP_TAGS and not (tag == "form" and self._wrapper(el)):
            # ASP.NET-style pages wrap the whole body in one <form>: that one is layout.
            return f"tag:{tag}"
        if tag == "header" and not self.in_article:
            return "tag:header"
        a = el.attrs
        if "hidden" in a or a.get("aria-hidden", "").lower() == "true":
            return "hidden"
        style = a.get("style", "").replace(" ", "").lower()
        if "display:none" in style or "visibility:hidden" in style:
            return "hidden"
        if self._wrapper(el):
            return None
        return attribute_reason(a, in_article=self.in_article)

    def _wrapper(self, el: Element) -> bool:
        """A wrapper holding the article, the page title or most of the text is layout, not chrome."""
        if el.tag in ("html", "body", "main", "article") or el.has_main or el.has_h1:
            return True
        a = el.attrs
        if a.get("role", "").lower() == "main" or a.get("itemprop", "").lower() == "articlebody":
            return True
        return bool(self.total) and el.tlen > 0.5 * self.total

    def _record_drop(self, reason: str, el: Element) -> None:
        dropped: Counter[str] = self.report["dropped"]
        dropped[reason] += 1
        examples: list[str] = self.report["examples"]
        if len(examples) < 3 and el.tag not in ("script", "style", "svg", "noscript", "template", "head"):
            text = _WS.sub(" ", raw_text(el)).strip()
            if text:
                examples.append(text[:80])

    # -- elements ------------------------------------------------------------
    def element(self, el: Element) -> None:
        reason = self._drop_reason(el)
        if reason is not None:
            self._record_drop(reason, el)
            return
        tag = el.tag
        article = self.in_article or tag in ("article", "main") or el.attrs.get("role", "").lower() == "main"
        if tag == "br":
            self._inline.append(_BR)
        elif tag in _HEADINGS:
            self.flush()
            text = " ".join(b.replace("\n", " ") for b in self.sub(el, article))
            if text:
                self.blocks.append("#" * _HEADINGS[tag] + " " + text)
                self.report["headings"] += 1
        elif tag in ("ul", "ol"):
            self.flush()
            items = sum(1 for c in el.children if isinstance(c, Element) and c.tag == "li")
            if items >= 3 and el.tlen and el.alen >= 0.8 * el.tlen and not self._wrapper(el):
                # a list of links: menus, "more stories", tag clouds
                self._record_drop("links:list", el)
                return
            self._list(el, ordered=tag == "ol")
        elif tag == "dl":
            self.flush()
            self._definitions(el, article)
        elif tag == "table":
            self.flush()
            self._table(el)
        elif tag == "pre":
            self.flush()
            self._pre(el)
        elif tag == "code":
            code = _WS.sub(" ", raw_text(el)).strip()
            if code:
                tick = "``" if "`" in code else "`"
                self._inline.append(f"{tick}{code}{tick}")
        elif tag == "blockquote":
            self.flush()
            inner = "\n\n".join(self.sub(el, article))
            if inner:
                self.blocks.append("\n".join(("> " + line) if line else ">" for line in inner.split("\n")))
        elif tag in ("sup", "sub"):
            # written out, a superscript would run into the number before it: "Section 4.2<sup>3</sup>"
            # read "Section 4.23", "10<sup>-6</sup>" read "10-6"
            raw = raw_text(el)
            inner = _WS.sub(" ", raw).strip()
            if inner.startswith("[") and inner.endswith("]"):
                self._inline.append(inner)  # a footnote mark "[3]" reads as one already
            elif inner:
                self._inline.append(("^" if tag == "sup" else "_") + (inner if len(inner) == 1 else f"({inner})"))
            elif raw:
                self._inline.append(" ")
        elif tag in ("img", "hr", "wbr"):
            if tag == "hr":
                self.flush()
        elif tag in _BLOCK or tag in ("article", "main"):
            self.flush()
            if tag in ("article", "main") or article != self.in_article:
                total = el.tlen if tag in ("article", "main") else None
                self.blocks.extend(self.sub(el, article, total))
            else:
                self.walk(el)
                self.flush()
        else:
            self.walk(el)

    def _definitions(self, el: Element, article: bool) -> None:
        """A definition list: each definition on one line after its term ("Health Data: Personal data
        …"), a paragraph each, so that a term is never delivered without what it means (terms that
        share a definition are written together, "API, Interface: …"; a second definition of a term
        is written after the term again)."""
        terms: list[str] = []
        label: str | None = None
        for child in el.children:
            if isinstance(child, str):
                if child.strip():
                    self.blocks.append(_WS.sub(" ", child).strip())
                continue
            reason = self._drop_reason(child)
            if reason is not None:
                self._record_drop(reason, child)
                continue
            if child.tag == "div":  # <dl><div><dt/><dd/></div></dl> (HTML 5.2 groups)
                self._definitions(child, article)
                continue
            text = " ".join(b.replace("\n", " ") for b in self.sub(child, article))
            if not text:
                continue
            if child.tag == "dt":
                terms.append(text)
            elif child.tag == "dd" and (terms or label):
                label = ", ".join(terms) if terms else label
                terms = []
                self.blocks.append(f"{label}: {text}")
            else:
                self.blocks.append(text)
        if terms:
            self.blocks.append(", ".join(terms))  # terms without a definition

    def _list(self, el: Element, ordered: bool) -> None:
        try:
            n = int(el.attrs.get("start", "1") or 1) if ordered else 1
        except ValueError:
            n = 1
        kind = el.attrs.get("type", "1") if ordered else "1"
        lines: list[str] = []
        for child in el.children:
            if isinstance(child, str):
                if child.strip():
                    lines.append(_WS.sub(" ", child).strip())
                continue
            reason = self._drop_reason(child)
            if reason is not None:
                self._record_drop(reason, child)
                continue
            if child.tag in ("ul", "ol"):
                r = _Renderer(self.total, self.report, self.in_article)
                r._list(child, ordered=child.tag == "ol")
                lines.extend("  " + line for block in r.blocks for line in block.split("\n"))
                continue
            blocks = self.sub(child)
            if not blocks:
                continue
            if child.tag != "li":
                lines.extend(blocks)
                continue
            prefix = f"{_ordinal(n, kind)}. " if ordered else "- "
            n += 1
            body = "\n".join(blocks).split("\n")
            pad = " " * len(prefix)
            lines.append(prefix + body[0])
            lines.extend((pad + line) if line else "" for line in body[1:])
        if lines:
            self.blocks.append("\n".join(lines))
            self.report["lists"] += 1

    def _rows(self, table: Element) -> list[tuple[list[Element], bool]]:
        rows: list[tuple[list[Element], bool]] = []

        def visit(el: Element, head: bool) -> None:
            for c in el.children:
                if isinstance(c, str) or self._drop_reason(c) is not None:
                    continue
                if c.tag in ("thead", "tbody", "tfoot"):
                    visit(c, c.tag == "thead")
                elif c.tag == "tr":
                    cells = [d for d in c.children if isinstance(d, Element) and d.tag in ("td", "th")]
                    if cells:
                        rows.append((cells, head or all(d.tag == "th" for d in cells)))

        visit(table, False)
        return rows

    def _table(self, el: Element) -> None:
        caption = next((c for c in el.children if isinstance(c, Element) and c.tag == "caption"), None)
        rows = self._rows(el)
        layout = not rows or any(holds(cell, "table") for cells, _ in rows for cell in cells)
        rendered: list[list[str]] = []
        if not layout:
            # a cell with rowspan="n" fills its column in the n-1 rows below (its value repeated),
            # so that their own cells land under the right headers
            pending: dict[int, list[Any]] = {}  # column -> [text, rows left]
            for cells, _ in rows:
                out: list[str] = []
                for cell in cells:
                    _take_spanned(out, pending)
                    blocks = self.sub(cell)
                    if len(blocks) > 2 and sum(map(len, blocks)) > 200:
                        layout = True
                        break
                    text = " ".join(b.replace("\n", " ") for b in blocks).replace("|", "\\|")
                    colspan, rowspan = _span(cell, "colspan"), _span(cell, "rowspan")
                    for c in range(len(out), len(out) + colspan):
                        if rowspan > 1:
                            pending[c] = [text if c == len(out) else "", rowspan - 1]
                    out.append(text)
                    out.extend([""] * (colspan - 1))
                if layout:
                    break
                while pending and max(pending) >= len(out):  # spanned columns right of the row's cells
                    if len(out) in pending:
                        _take_spanned(out, pending)
                    else:
                        out.append("")
                rendered.append(out)
        width = max((len(r) for r in rendered), default=0)
        if not layout and (width < 2 and len(rendered) < 2):
            layout = True
        if layout:
            for cells, _ in rows:
                for cell in cells:
                    self.blocks.extend(self.sub(cell))
            return
        if caption is not None:
            cap = " ".join(self.sub(caption))
            if cap:
                self.blocks.append(cap)
        rendered = [r for r in rendered if any(c for c in r)]
        if not rendered:
            return
        rows_out = [r + [""] * (width - len(r)) for r in rendered]
        lines = ["| " + " | ".join(rows_out[0]) + " |", "|" + "---|" * width]
        lines.extend("| " + " | ".join(r) + " |" for r in rows_out[1:])
        self.blocks.append("\n".join(lines))
        self.report["tables"] += 1

    def _pre(self, el: Element) -> None:
        code = raw_text(el, keep_breaks=True).strip("\n").rstrip()
        if not code.strip():
            return
        lang = ""
        for node in [el] + [c for c in el.children if isinstance(c, Element) and c.tag == "code"]:
            m = re.search(r"(?:^|\s)(?:language|lang)-([\w+#-]+)", node.attrs.get("class", ""))
            if m:
                lang = m.group(1)
                break
        fence = "```"
        while fence in code:
            fence += "`"
        self.blocks.append(f"{fence}{lang}\n{code}\n{fence}")
        self.report["code_blocks"] += 1


def _ordinal(n: int, kind: str) -> str:
    """Item *n*'s number as ``<ol type=…>`` shows it: 1, a, A, i, I (a clause's "(b)" stays b)."""
    if kind in ("a", "A") and 1 <= n <= 26 * 27:
        letters = ""
        while n:
            n, r = divmod(n - 1, 26)
            letters = chr(ord("a") + r) + letters
        return letters if kind == "a" else letters.upper()
    if kind in ("i", "I") and 1 <= n < 4000:
        out = ""
        for value, numeral in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
                               (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
            while n >= value:
                out, n = out + numeral, n - value
        return out if kind == "i" else out.upper()
    return str(n)


def _span(cell: Element, attr: str) -> int:
    """A cell's colspan or rowspan: 1 when absent or not a number, at most 50."""
    try:
        return max(1, min(int(cell.attrs.get(attr, "1") or 1), 50))
    except ValueError:
        return 1


def _take_spanned(out: list[str], pending: dict[int, list[Any]]) -> None:
    """Append the values that cells spanning from rows above hold at the next columns of *out*."""
    while len(out) in pending:
        entry = pending[len(out)]
        out.append(entry[0])
        entry[1] -= 1
        if entry[1] <= 0:
            del pending[len(out) - 1]


def looks_like_html(text: str) -> bool:
    """True when *text* is clearly an HTML document (doctype, or an html/head/body element)."""
    head = text[:2000].lstrip("\ufeff \t\r\n").lower()
    if not head.startswith("<"):
        return False  # JSON holding HTML, prose quoting a tag: not a page
    if head.startswith("<!doctype html") or head.startswith("<html"):
        return True
    return bool(re.search(r"<(?:html|head|body)[\s>]", head)) and "</" in text


def html_to_text(html: str) -> tuple[str, dict[str, Any]]:
    """Convert an HTML page to semantic text. Returns ``(text, report)``.

    The report counts dropped elements by reason (``tag:nav``, ``class:share``, ``hidden``,
    ``text:chrome``), gives up to three examples of dropped visible text, and counts headings,
    lists, tables and code blocks kept.
    """
    root = parse(html)
    report: dict[str, Any] = {
        "dropped": Counter(), "examples": [], "headings": 0, "lists": 0, "tables": 0, "code_blocks": 0,
    }
    renderer = _Renderer(root.tlen, report)
    renderer.walk(root)
    renderer.flush()
    blocks = filter_blocks(renderer.blocks, report)
    text = "\n\n".join(blocks)
    out: dict[str, Any] = {"chars_in": len(html), "chars_out": len(text)}
    out["dropped"] = dict(sorted(report["dropped"].items()))
    if report["examples"]:
        out["examples"] = report["examples"]
    for key in ("headings", "lists", "tables", "code_blocks"):
        if report[key]:
            out[key] = report[key]
    return text, out

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
from html.parser import HTMLParser
from typing import Any

_VOID = frozenset(
    "area base br col embed hr img input keygen link meta param source track wbr".split()
)
#: Elements dropped with everything inside them.
DROP_TAGS = frozenset(
    "script style noscript nav footer aside form svg iframe template head button select textarea "
    "input canvas object embed audio video map dialog math".split()
)
_BLOCK = frozenset(
    "address article aside blockquote body center dd details dialog div dl dt fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main nav ol p pre section summary "
    "table tbody td tfoot th thead tr ul caption legend".split()
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
# Start tags that close an open <p> (HTML's implied end tags, simplified).
_CLOSES_P = frozenset(
    "address article aside blockquote div dl fieldset figure footer form h1 h2 h3 h4 h5 h6 header "
    "hr main nav ol p pre section table ul".split()
)
_MAX_DEPTH = 400
_BR = "\x00"
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")

_CHROME_WORDS = (
    r"nav|navbar|navigation|menu|menus|footer|sidebar|breadcrumbs?|share|shares|sharing|social|"
    r"cookies?|banner|advert|adverts|advertisement|advertising|related|comments?"
)
_CHROME_TOKEN = re.compile(
    rf"^(?:site|main|global|top|primary|secondary|mobile|page|post|article)?(?:{_CHROME_WORDS})"
    r"(?:s|bar|buttons?|links?|tools?|icons?|wrapper|container|list|box|section|area|block|widget|"
    r"module|menu|nav|items?|consent|notice|popup|modal)?$"
)
_CHROME_EXACT = frozenset(
    "ad ads adslot adunit promo newsletter subscribe subscription popup outbrain taboola sponsored "
    "signup".split()
)
_HEADER_TOKENS = frozenset("header masthead topbar siteheader pageheader globalheader".split())
_EMBED_TOKENS = frozenset("embed embedded tweet blockquote".split())
_LAYOUT_MODIFIERS = frozenset("has with w no without show hide".split())
_CHROME_ROLES = frozenset(
    "navigation banner contentinfo complementary search menu menubar toolbar dialog alertdialog".split()
)
_CHROME_TEXT = re.compile(
    r"(?:share(?: this)?(?: (?:article|story|post|page|link))?(?: (?:on|via) \w+)?"
    r"|(?:subscribe|sign up|signup|register|log ?in|sign in)\b.{0,80}"
    r"|(?:we|this (?:site|website)) uses? cookies\b.{0,700}"
    r"|(?:accept|allow|manage)(?: all)? cookies?.{0,40}|cookie (?:settings|policy|preferences)"
    r"|advertisement|sponsored(?: content)?|skip to (?:main )?content|(?:read|see) more"
    r"|follow us\b.{0,60}|click here to\b.{0,60}|continue reading|related (?:articles|stories|posts)"
    r"|most (?:popular|read)|recommended(?: for you)?|back to top|back to gallery|close|caption|video|advert"
    r"|comments?|continue reading the main story|image \d+ of \d+|show more sharing options"
    r"|(?:email|facebook|twitter|linkedin|pinterest|whatsapp|reddit|print)(?: ?[•|·/] ?"
    r"(?:email|facebook|twitter|linkedin|pinterest|whatsapp|reddit|print))+)[.:!]?",
    re.IGNORECASE,
)


_HEADING_TEXT = re.compile(r"#{1,6} (.*)$", re.DOTALL)
_LIST_BLOCK = re.compile(r"(?:- |\d+\. )")
_LIST_HEADING = re.compile(r"(?:- |\d+\. )#{1,6} ")
_SOCIAL_ITEM = re.compile(
    r"(?:- |\d+\. )(?:share on )?(?:facebook|twitter|linkedin|pinterest|whatsapp|reddit|email|e-mail|print|"
    r"copy link.*|flipboard|tumblr|telegram|messenger|sms|comments?|show more sharing options|share)",
    re.IGNORECASE,
)
_CHROME_HEADING = re.compile(
    r"(?:most (?:popular|read|viewed|shared|emailed)|related\b|recommended|trending|more (?:from|on|stories|news)\b"
    r"|you (?:may|might) also like|popular (?:now|stories|articles|videos)|top stories|latest (?:news|stories|videos)"
    r"|editor'?s picks|around the web|read next|what to read next|sponsored|from our partners|share this)",
    re.IGNORECASE,
)


class _El:
    __slots__ = ("tag", "attrs", "children", "parent", "depth", "tlen", "alen", "has_main", "has_h1")

    def __init__(self, tag: str, attrs: dict[str, str], parent: _El | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[_El | str] = []
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.tlen = 0
        self.alen = 0  # text inside links
        self.has_main = False
        self.has_h1 = False


class _TreeBuilder(HTMLParser):
    """A forgiving tree builder: void elements, implied end tags, stray end tags ignored."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _El("#root", {}, None)
        self.stack: list[_El] = [self.root]

    @property
    def top(self) -> _El:
        return self.stack[-1]

    def _close_until(self, names: frozenset[str] | set[str], stop: frozenset[str] | set[str]) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            tag = self.stack[i].tag
            if tag in names:
                del self.stack[i:]
                return
            if tag in stop:
                return

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _CLOSES_P:
            self._close_until({"p"}, {"div", "td", "th", "li", "table", "body", "blockquote", "section", "article"})
        if tag == "li":
            self._close_until({"li"}, {"ul", "ol", "table", "body"})
        elif tag in ("dt", "dd"):
            self._close_until({"dt", "dd"}, {"dl", "table", "body"})
        elif tag == "tr":
            self._close_until({"tr"}, {"table", "thead", "tbody", "tfoot"})
        elif tag in ("td", "th"):
            self._close_until({"td", "th"}, {"tr", "table"})
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_until({"thead", "tbody", "tfoot"}, {"table"})
        elif tag == "option":
            self._close_until({"option"}, {"select", "body"})
        parent = self.top
        el = _El(tag, {k.lower(): (v or "") for k, v in attrs}, parent)
        parent.children.append(el)
        if tag not in _VOID and parent.depth < _MAX_DEPTH:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.top.children.append(_El(tag, {k.lower(): (v or "") for k, v in attrs}, self.top))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if data:
            self.top.children.append(data)


def parse(html: str) -> _El:
    """Parse *html* into a light element tree (never raises on malformed markup)."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    _measure(builder.root)
    return builder.root


def _measure(root: _El) -> None:
    """Fill text length and 'holds main/article', 'holds h1' for every element, bottom-up, without recursion."""
    order: list[_El] = []
    todo = [root]
    while todo:
        el = todo.pop()
        order.append(el)
        todo.extend(c for c in el.children if isinstance(c, _El))
    for el in reversed(order):
        if el.tag in ("script", "style", "noscript", "template", "head"):
            continue
        n = a = 0
        main = h1 = False
        for c in el.children:
            if isinstance(c, str):
                n += len(c.strip())
            else:
                n += c.tlen
                a += c.alen
                main = main or c.has_main or c.tag in ("main", "article")
                h1 = h1 or c.has_h1 or c.tag == "h1"
        el.tlen = n
        el.alen = n if el.tag == "a" else a
        el.has_main = main
        el.has_h1 = h1


def _tokens(value: str) -> list[str]:
    value = re.sub(r"([a-z])([A-Z])", r"\1 \2", value)
    return [t for t in re.split(r"[\s_\-:./]+", value.lower()) if t]


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
    def sub(self, el: _El, in_article: bool | None = None, total: int | None = None) -> list[str]:
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

    def walk(self, el: _El) -> None:
        for child in el.children:
            if isinstance(child, str):
                self._inline.append(child)
            else:
                self.element(child)

    # -- decisions -----------------------------------------------------------
    def _drop_reason(self, el: _El) -> str | None:
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
        role = a.get("role", "").lower()
        if role in _CHROME_ROLES:
            return f"role:{role}"
        for attr in ("class", "id"):
            prev = ""
            tokens = _tokens(a.get(attr, ""))
            if _EMBED_TOKENS.intersection(tokens):
                continue  # an embedded post or tweet quoted in the text ("social-media-embed")
            for tok in tokens:
                # "has-sidebar", "with-comments", "w-sidebar" describe a layout, not chrome.
                if (tok in _CHROME_EXACT or _CHROME_TOKEN.match(tok)) and prev not in _LAYOUT_MODIFIERS:
                    return f"{attr}:{tok}"
                # a page header by class, like <header> itself: chrome outside an article only
                if tok in _HEADER_TOKENS and not self.in_article and prev not in _LAYOUT_MODIFIERS:
                    return f"{attr}:{tok}"
                prev = tok
        return None

    def _wrapper(self, el: _El) -> bool:
        """A wrapper holding the article, the page title or most of the text is layout, not chrome."""
        if el.tag in ("html", "body", "main", "article") or el.has_main or el.has_h1:
            return True
        a = el.attrs
        if a.get("role", "").lower() == "main" or a.get("itemprop", "").lower() == "articlebody":
            return True
        return bool(self.total) and el.tlen > 0.5 * self.total

    def _record_drop(self, reason: str, el: _El) -> None:
        dropped: Counter[str] = self.report["dropped"]
        dropped[reason] += 1
        examples: list[str] = self.report["examples"]
        if len(examples) < 3 and el.tag not in ("script", "style", "svg", "noscript", "template", "head"):
            text = _WS.sub(" ", _raw_text(el)).strip()
            if text:
                examples.append(text[:80])

    # -- elements ------------------------------------------------------------
    def element(self, el: _El) -> None:
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
            items = sum(1 for c in el.children if isinstance(c, _El) and c.tag == "li")
            if items >= 3 and el.tlen and el.alen >= 0.8 * el.tlen and not self._wrapper(el):
                # a list of links: menus, "more stories", tag clouds
                self._record_drop("links:list", el)
                return
            self._list(el, ordered=tag == "ol")
        elif tag == "table":
            self.flush()
            self._table(el)
        elif tag == "pre":
            self.flush()
            self._pre(el)
        elif tag == "code":
            code = _WS.sub(" ", _raw_text(el)).strip()
            if code:
                tick = "``" if "`" in code else "`"
                self._inline.append(f"{tick}{code}{tick}")
        elif tag == "blockquote":
            self.flush()
            inner = "\n\n".join(self.sub(el, article))
            if inner:
                self.blocks.append("\n".join(("> " + line) if line else ">" for line in inner.split("\n")))
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

    def _list(self, el: _El, ordered: bool) -> None:
        try:
            n = int(el.attrs.get("start", "1") or 1) if ordered else 1
        except ValueError:
            n = 1
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
            prefix = f"{n}. " if ordered else "- "
            n += 1
            body = "\n".join(blocks).split("\n")
            pad = " " * len(prefix)
            lines.append(prefix + body[0])
            lines.extend((pad + line) if line else "" for line in body[1:])
        if lines:
            self.blocks.append("\n".join(lines))
            self.report["lists"] += 1

    def _rows(self, table: _El) -> list[tuple[list[_El], bool]]:
        rows: list[tuple[list[_El], bool]] = []

        def visit(el: _El, head: bool) -> None:
            for c in el.children:
                if isinstance(c, str) or self._drop_reason(c) is not None:
                    continue
                if c.tag in ("thead", "tbody", "tfoot"):
                    visit(c, c.tag == "thead")
                elif c.tag == "tr":
                    cells = [d for d in c.children if isinstance(d, _El) and d.tag in ("td", "th")]
                    if cells:
                        rows.append((cells, head or all(d.tag == "th" for d in cells)))

        visit(table, False)
        return rows

    def _table(self, el: _El) -> None:
        caption = next((c for c in el.children if isinstance(c, _El) and c.tag == "caption"), None)
        rows = self._rows(el)
        layout = not rows or any(_holds(cell, "table") for cells, _ in rows for cell in cells)
        rendered: list[list[str]] = []
        if not layout:
            for cells, _ in rows:
                out: list[str] = []
                for cell in cells:
                    blocks = self.sub(cell)
                    if len(blocks) > 2 and sum(map(len, blocks)) > 200:
                        layout = True
                        break
                    text = " ".join(b.replace("\n", " ") for b in blocks).replace("|", "\\|")
                    out.append(text)
                    try:
                        span = int(cell.attrs.get("colspan", "1") or 1)
                    except ValueError:
                        span = 1
                    out.extend([""] * max(0, min(span, 50) - 1))
                if layout:
                    break
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

    def _pre(self, el: _El) -> None:
        code = _raw_text(el, keep_breaks=True).strip("\n").rstrip()
        if not code.strip():
            return
        lang = ""
        for node in [el] + [c for c in el.children if isinstance(c, _El) and c.tag == "code"]:
            m = re.search(r"(?:^|\s)(?:language|lang)-([\w+#-]+)", node.attrs.get("class", ""))
            if m:
                lang = m.group(1)
                break
        fence = "```"
        while fence in code:
            fence += "`"
        self.blocks.append(f"{fence}{lang}\n{code}\n{fence}")
        self.report["code_blocks"] += 1


def _teaser_list(block: str) -> bool:
    """A list whose items are mostly headings: story cards ("- #### Headline / 3 hours ago")."""
    items = [line for line in block.split("\n") if _LIST_BLOCK.match(line)]
    headed = sum(1 for line in items if _LIST_HEADING.match(line))
    return headed >= 3 and headed >= 0.5 * len(items)


def _holds(el: _El, tag: str) -> bool:
    todo = [c for c in el.children if isinstance(c, _El)]
    while todo:
        c = todo.pop()
        if c.tag == tag:
            return True
        todo.extend(d for d in c.children if isinstance(d, _El))
    return False


def _raw_text(el: _El, keep_breaks: bool = False) -> str:
    parts: list[str] = []
    todo: list[_El | str] = [el]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            parts.append(node)
        elif node.tag == "br":
            parts.append("\n" if keep_breaks else " ")
        elif node.tag not in ("script", "style", "template") or node is el:
            todo.extend(reversed(node.children))
    return "".join(parts)


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
    blocks: list[str] = []
    in_chrome_section = False
    for block in renderer.blocks:
        heading = _HEADING_TEXT.match(block)
        if heading:
            in_chrome_section = bool(_CHROME_HEADING.match(heading.group(1)))
        elif in_chrome_section and not _LIST_BLOCK.match(block):
            in_chrome_section = False
        reason = None
        if in_chrome_section:
            # "## Most Popular" and the link lists under it
            reason = "text:chrome_section"
        elif len(block) <= 800 and _CHROME_TEXT.fullmatch(block.strip()):
            reason = "text:chrome"
        elif _LIST_BLOCK.match(block) and all(_SOCIAL_ITEM.fullmatch(line) for line in block.split("\n")):
            reason = "text:share_list"
        elif _LIST_BLOCK.match(block) and _teaser_list(block):
            reason = "text:teaser_list"
        if reason:
            report["dropped"][reason] += 1
            if len(report["examples"]) < 3:
                report["examples"].append(block[:80])
            continue
        blocks.append(block)
    text = "\n\n".join(blocks)
    out: dict[str, Any] = {"chars_in": len(html), "chars_out": len(text)}
    out["dropped"] = dict(sorted(report["dropped"].items()))
    if report["examples"]:
        out["examples"] = report["examples"]
    for key in ("headings", "lists", "tables", "code_blocks"):
        if report[key]:
            out[key] = report[key]
    return text, out

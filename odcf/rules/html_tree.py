"""A light, forgiving HTML element tree built with the stdlib parser (used by :mod:`odcf.rules.html`).

Void elements, implied end tags (``<p>``, ``<li>``, ``<td>``, ...) and stray end tags are handled;
nesting deeper than ``MAX_DEPTH`` is flattened so that nothing recurses without bound. Each element
knows its visible text length (``tlen``), the part of it inside links (``alen``), and whether it
holds a ``main``/``article`` element or an ``h1``.

>>> root = parse("<div><p>one<p>two</div>")
>>> [c.tag for c in root.children[0].children]
['p', 'p']
"""
from __future__ import annotations

from html.parser import HTMLParser

_VOID = frozenset(
    "area base br col embed hr img input keygen link meta param source track wbr".split()
)
# Start tags that close an open <p> (HTML's implied end tags, simplified).
_CLOSES_P = frozenset(
    "address article aside blockquote div dl fieldset figure footer form h1 h2 h3 h4 h5 h6 header "
    "hr main nav ol p pre section table ul".split()
)
MAX_DEPTH = 400
#: Elements whose text is never visible.
INVISIBLE = frozenset({"script", "style", "noscript", "template", "head"})


class Element:
    __slots__ = ("tag", "attrs", "children", "parent", "depth", "tlen", "alen", "has_main", "has_h1")

    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Element | str] = []
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
        self.root = Element("#root", {}, None)
        self.stack: list[Element] = [self.root]

    @property
    def top(self) -> Element:
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
        el = Element(tag, {k.lower(): (v or "") for k, v in attrs}, parent)
        parent.children.append(el)
        if tag not in _VOID and parent.depth < MAX_DEPTH:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.top.children.append(Element(tag, {k.lower(): (v or "") for k, v in attrs}, self.top))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if data:
            self.top.children.append(data)


def parse(html: str) -> Element:
    """Parse *html* into a light element tree (never raises on malformed markup)."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    measure(builder.root)
    return builder.root


def measure(root: Element) -> None:
    """Fill text length and 'holds main/article', 'holds h1' for every element, bottom-up, without recursion."""
    order: list[Element] = []
    todo = [root]
    while todo:
        el = todo.pop()
        order.append(el)
        todo.extend(c for c in el.children if isinstance(c, Element))
    for el in reversed(order):
        if el.tag in INVISIBLE:
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


def holds(el: Element, tag: str) -> bool:
    todo = [c for c in el.children if isinstance(c, Element)]
    while todo:
        c = todo.pop()
        if c.tag == tag:
            return True
        todo.extend(d for d in c.children if isinstance(d, Element))
    return False


def raw_text(el: Element, keep_breaks: bool = False) -> str:
    parts: list[str] = []
    todo: list[Element | str] = [el]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            parts.append(node)
        elif node.tag == "br":
            parts.append("\n" if keep_breaks else " ")
        elif node.tag not in ("script", "style", "template") or node is el:
            todo.extend(reversed(node.children))
    return "".join(parts)

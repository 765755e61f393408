"""What counts as page chrome: tags, class/id/role words, and whole blocks of chrome text.

Used by :mod:`odcf.rules.html`. Element-level: :data:`DROP_TAGS` and :func:`attribute_reason`
(class/id/role naming navigation, menus, footers, sidebars, breadcrumbs, sharing, social links,
cookie banners, adverts, related items, comments). Block-level, on the rendered text:
:func:`filter_blocks` drops short blocks whose whole text is chrome ("Share this",
"Subscribe ...", "We use cookies ..."), sections under a chrome heading ("Most Popular"), lists
of share buttons and lists of story cards.

>>> attribute_reason({"class": "share-buttons"}, in_article=True)
'class:share'
>>> attribute_reason({"class": "page with-sidebar"}, in_article=False) is None
True
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

#: Elements dropped with everything inside them.
DROP_TAGS = frozenset(
    "script style noscript nav footer aside form svg iframe template head button select textarea "
    "input canvas object embed audio video map dialog math".split()
)

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


def _tokens(value: str) -> list[str]:
    value = re.sub(r"([a-z])([A-Z])", r"\1 \2", value)
    return [t for t in re.split(r"[\s_\-:./]+", value.lower()) if t]

def attribute_reason(attrs: Mapping[str, str], *, in_article: bool) -> str | None:
    """``role:...``, ``class:...`` or ``id:...`` when the attributes name chrome, else None."""
    role = attrs.get("role", "").lower()
    if role in _CHROME_ROLES:
        return f"role:{role}"
    for attr in ("class", "id"):
        prev = ""
        tokens = _tokens(attrs.get(attr, ""))
        if _EMBED_TOKENS.intersection(tokens):
            continue  # an embedded post or tweet quoted in the text ("social-media-embed")
        for tok in tokens:
            # "has-sidebar", "with-comments", "w-sidebar" describe a layout, not chrome.
            if (tok in _CHROME_EXACT or _CHROME_TOKEN.match(tok)) and prev not in _LAYOUT_MODIFIERS:
                return f"{attr}:{tok}"
            # a page header by class, like <header> itself: chrome outside an article only
            if tok in _HEADER_TOKENS and not in_article and prev not in _LAYOUT_MODIFIERS:
                return f"{attr}:{tok}"
            prev = tok
    return None


def _teaser_list(block: str) -> bool:
    """A list whose items are mostly headings: story cards ("- #### Headline / 3 hours ago")."""
    items = [line for line in block.split("\n") if _LIST_BLOCK.match(line)]
    headed = sum(1 for line in items if _LIST_HEADING.match(line))
    return headed >= 3 and headed >= 0.5 * len(items)


def filter_blocks(blocks: list[str], report: dict[str, Any]) -> list[str]:
    """Drop rendered blocks that are chrome; count them in ``report["dropped"]`` with examples."""
    dropped: Counter[str] = report["dropped"]
    out: list[str] = []
    in_chrome_section = False
    for block in blocks:
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
            dropped[reason] += 1
            if len(report["examples"]) < 3:
                report["examples"].append(block[:80])
            continue
        out.append(block)
    return out

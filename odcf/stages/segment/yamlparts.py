"""YAML in the segmenter: a config (a Helm ``values.yaml``, a compose file, a block of YAML in a
tool's output, a markdown page's front-matter) cut into one node a piece, each knowing the key lines
above it.

A YAML line means nothing without its path: ``enabled: true`` delivered under ``autoscaling:``
when it is ``ingress.enabled`` says the opposite of the config. So every node (a key line or a
``- `` item, with the comment lines above it and the lines of its block scalar) is a piece whose
meta names its parent node (``under``, a piece index: the budget delivers a node only with every
key line of its path, and a key line only with one of its children) and its ancestors
(``yaml_path``), and each parent says how many children it has, so that assembly marks those left
out (``# [YAML_KEYS: n]``, a comment: the delivered text stays valid YAML; odcf.render).
"""
from __future__ import annotations

import re
from typing import Any

from odcf.document import Source
from odcf.stages.segment.lines import Piece
from odcf.stages.segment.tables import aligned_run

#: A key line: optional "- " item marks, a plain or quoted key, ":" and a space or the end. Parentheses,
#: "=", ";", "<" and ">" keep code out ("if (x):", "a = b:" parse as YAML too); braces only around a
#: word, a path's parameter ("/parcels/{trackingId}/redirect:" in an OpenAPI spec), never a block's "{".
KEY_RE = re.compile(r"""^(\s*)(?:-\s+)*(?:"[^"\n]*"|'[^'\n]*'|[^\s#'"\-?:,\[\]{}()=;<>|&*!%@`]"""
                    r"""(?:[^#:()=;<>{}]|\{[\w.\-]+\})*?)\s*:(?:\s|$)""")
#: A key line in a source declared a YAML file (:func:`declared_yaml`), where no code is to be kept
#: out: any plain key YAML reads ("GET /x (v2):", "a=b:", "/items/{id}:"), which may hold ":" not
#: followed by a space and "#" not after a space; it does not open with an indicator ("{", "[", "&" …).
DECLARED_KEY_RE = re.compile(r"""^(\s*)(?:-\s+)*(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*'|"""
                             r"""(?:[^\s#'"\-?:,\[\]{}|>&*!%@`]|[-?:](?=\S))"""
                             r"""(?:[^\s:#]|[ \t](?!#)|:(?=\S)|(?<=\S)#)*?)[ \t]*:(?:\s|$)""")
#: A sequence item: "- value" or a lone "-".
ITEM_RE = re.compile(r"^(\s*)-(?:\s|$)")
COMMENT_RE = re.compile(r"^\s*#")
#: A key whose value is a block scalar on the lines below it ("script: |", "description: >-").
BLOCK_SCALAR_RE = re.compile(r":\s*[|>][-+0-9]*\s*(?:#.*)?$")
#: Statements of code that read as keys ("else:", "def f():" is kept out by the parentheses).
_CODE_KEY_RE = re.compile(r"^\s*(?:if|else|elif|for|while|try|except|finally|with|def|class|return|case|default)\b")
#: A YAML block is at least this many nodes (with one holding another): fewer is a form or a header.
_MIN_NODES = 3
#: Key lines that nest but do not parse as YAML (``kubectl describe pod``: "Annotations:  kubectl…/
#: restartedAt: 2024-…", values with colons) are read as a config too from this many nodes on: a
#: tree of keys all the same, where "Reason: OOMKilled" means nothing without "Last State:" above it.
_LOOSE_MIN_NODES = 8


#: A value that is a sentence: four words or more ending in ".", "?" or "!" ("Batch 88412 failed at 02:14.").
_SENTENCE_VALUE_RE = re.compile(r"\S+(?:[ \t]+\S+){3,}[.?!][\"')\]]?[ \t]*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def key_line(line: str, declared: bool = False) -> re.Match[str] | None:
    """The key of a key line (:data:`KEY_RE`; in a source *declared* a YAML file, :data:`DECLARED_KEY_RE`),
    or None."""
    return (DECLARED_KEY_RE if declared else KEY_RE).match(line)


def _node_line(line: str, declared: bool = False) -> bool:
    """A key line or an item. In a declared YAML file "default:", "if:" and "with:" are keys (an OpenAPI
    schema's default, a workflow step's "with:"), not statements of code."""
    if declared:
        return bool(DECLARED_KEY_RE.match(line) or ITEM_RE.match(line))
    return bool((KEY_RE.match(line) and not _CODE_KEY_RE.match(line)) or ITEM_RE.match(line))


def _prose_key(line: str) -> bool:
    """A "key" that is words of a sentence ("The deploy failed. Current config of the service:"):
    it holds a full stop and a space, or more than four words."""
    m = KEY_RE.match(line)
    key = line[m.end(1):m.end()].rstrip().rstrip(":") if m else ""
    return ". " in key or len(key.split()) > 4


def _depth(line: str) -> float:
    """How deep a node line sits: its indentation, half a step more for an item ("hosts:" over an
    unindented "- a" still holds it)."""
    return _indent(line) + (0.5 if ITEM_RE.match(line) else 0.0)


def declared_yaml(source: Source) -> bool:
    """Whether a source's file name (its label: its origin, else its id; ``odcf compress FILE`` gives both
    the path) declares YAML: ``.yaml`` or ``.yml``."""
    return source.label.lower().endswith((".yaml", ".yml"))


def yaml_run(lines: list[tuple[int, int, str]], i: int, *, comments_before: bool = False,
             declared: bool = False) -> tuple[int, int]:
    """End (exclusive) of a block of YAML that starts at line *i* (a key line), or *i* when the
    lines there are not one: nodes at its indentation or deeper, comment and blank lines between
    them, at least :data:`_MIN_NODES` nodes with a key holding another key, and the whole parses
    as a YAML mapping. With *comments_before*, line *i* may be a comment over the first key.
    Second: where the lines read stop, so that a caller need not ask again for the lines before
    it (a transcript of "name: text" lines would be read again from each line). In a source
    *declared* a YAML file (:func:`declared_yaml`) the lines need only parse: flat keys, and keys
    that mostly hold a sentence ("notes: Do not run during month-end close."), are a config there."""
    n = len(lines)
    k = i
    if comments_before:
        while k < n and (not lines[k][2].strip() or COMMENT_RE.match(lines[k][2])):
            k += 1
        if k == n:
            return i, k
    first = lines[k][2]
    if not key_line(first, declared) or ITEM_RE.match(first) or (_CODE_KEY_RE.match(first) and not declared):
        return i, k + 1
    if _prose_key(first) and not declared:
        return i, k + 1
    base = _indent(first)
    end = k
    nodes = 0
    nested = False
    prev_key: str | None = None  # the last node line, while it holds nothing below it yet
    scalar: int | None = None  # indentation of the key whose block scalar is being read
    j = k
    while j < n:
        line = lines[j][2]
        if not line.strip() or COMMENT_RE.match(line) and scalar is None:
            j += 1
            continue
        ind = _indent(line)
        if scalar is not None and ind > scalar:
            end = j + 1
            j += 1
            continue
        scalar = None
        if ind < base or (ind == base and not _node_line(line, declared)):
            break
        if _node_line(line, declared):
            if nodes == 1 and prev_key is not None and prev_key.rstrip().endswith(":") \
                    and _depth(line) <= _depth(prev_key) and not declared:
                return i, k + 1  # "Current config:" over the config: a lead-in, not a key holding nothing
            nodes += 1
            if prev_key is not None and _depth(line) > _depth(prev_key) and prev_key.rstrip().endswith(":") \
                    and key_line(line, declared):
                nested = True  # a key under a key: "Rules:" over "- …" items alone is a lead-in and its list
            prev_key = line
            if BLOCK_SCALAR_RE.search(line):
                scalar = ind
        elif prev_key is None or ind <= _indent(prev_key):
            break  # a line that is neither a node nor a value running on from the node above
        elif prev_key.rstrip().endswith(":") and aligned_run(lines, j)[0] > j:
            # a table under a key that holds no value ("Events:" over kubectl's events): a table of its
            # own, cut in rows, not the value of the key
            end = j - 1 if j and lines[j - 1][2] == prev_key else end
            break
        end = j + 1
        j += 1
    if (nodes < _MIN_NODES or not nested) and not declared:
        return i, max(j, k + 1)
    top = [line for _, _, line in lines[k:end] if _indent(line) == base and KEY_RE.match(line)]
    if not declared and 2 * sum(bool(_SENTENCE_VALUE_RE.match(line[KEY_RE.match(line).end():])) for line in top) \
            > len(top):
        # most keys hold a sentence: a transcript's "Priya Nair: Luis, you own … by 28 March." lines over an
        # "Action items:" list, not a config
        return i, max(j, k + 1)
    start = i if comments_before else k
    if _parses(lines[start:end], base) or (nodes >= _LOOSE_MIN_NODES and not comments_before):
        return end, max(j, k + 1)
    return i, max(j, k + 1)


def front_matter(lines: list[tuple[int, int, str]]) -> int:
    """The line of the closing fence of a text's YAML front-matter (a markdown page's "---" line at
    its top, ``title: …`` and ``date: …`` lines, then "---" or "..."), or 0 when the text opens with
    none: the lines between the fences must parse as a YAML mapping. Its keys are a config's (a node a
    piece), and assembly writes its fences around what it delivers of it: cut as prose, its opening
    "---" was left out and its closing one kept, which turns the keys above it into a setext heading."""
    if not lines or lines[0][2].rstrip() != "---":
        return 0
    end = next((k for k in range(1, len(lines)) if lines[k][2].rstrip() in ("---", "...")), 0)
    if end < 2 or not any(line.strip() and not COMMENT_RE.match(line) for _, _, line in lines[1:end]):
        return 0
    return end if _parses(lines[1:end], 0) else 0


def _parses(lines: list[tuple[int, int, str]], base: int) -> bool:
    import yaml

    body = "\n".join(line[base:] if not line[:base].strip() else line for _, _, line in lines)
    try:
        value = yaml.safe_load(body)
    except yaml.YAMLError:
        return False
    except Exception:  # noqa: BLE001 - a constructor may fail on odd tags: not a config then
        return False
    return isinstance(value, dict)


def yaml_pieces(lines: list[tuple[int, int, str]], paragraph: int, offset: int, block: int,
                line_piece: Any, *, declared: bool = False) -> list[Piece]:
    """The nodes of the YAML block *lines* as pieces, the first to be piece number *offset* of its
    source (``under`` and ``yaml_path`` name pieces by number). Comment lines go with the node below
    them (at the end of the block: with the node above); the lines of a block scalar, or of a value
    running over lines, with their key. *declared*: the source is declared a YAML file (its keys are
    read by :data:`DECLARED_KEY_RE`)."""
    groups: list[list[tuple[int, int, str]]] = []  # each node's lines
    node_lines: list[str] = []  # each node's own line
    pending: list[tuple[int, int, str]] = []  # comment lines waiting for the node below them
    scalar: int | None = None
    for ln in lines:
        text = ln[2]
        if not text.strip():
            continue
        ind = _indent(text)
        if groups and scalar is not None and ind > scalar:
            groups[-1].extend(pending + [ln])
            pending = []
            continue
        scalar = None
        if COMMENT_RE.match(text):
            pending.append(ln)
            continue
        if groups and not _node_line(text, declared):
            groups[-1].extend(pending + [ln])  # a plain value running on over lines
            pending = []
            continue
        groups.append(pending + [ln])
        node_lines.append(text)
        pending = []
        if BLOCK_SCALAR_RE.search(text):
            scalar = ind
    if pending:
        if groups:
            groups[-1].extend(pending)
        else:
            groups.append(pending)
            node_lines.append(pending[-1][2])
    parents: list[int | None] = []
    stack: list[int] = []
    for k, text in enumerate(node_lines):
        while stack and _depth(node_lines[stack[-1]]) >= _depth(text):
            stack.pop()
        parents.append(stack[-1] if stack else None)
        stack.append(k)
    children: dict[int | None, list[int]] = {}
    for k, p in enumerate(parents):
        children.setdefault(p, []).append(k)

    def count(p: int | None) -> list[Any]:
        """[children, their indentation, whether they are items] of node *p* (None: the block)."""
        kids = children.get(p, [])
        if not kids:
            return [0, "", False]
        first = node_lines[kids[0]]
        return [len(kids), first[:_indent(first)], bool(ITEM_RE.match(first))]

    root = count(None)
    out: list[Piece] = []
    for k, group in enumerate(groups):
        path: list[int] = []
        p = parents[k]
        while p is not None:
            path.append(offset + p)
            p = parents[p]
        meta: dict[str, Any] = {"yaml_block": block, "yaml_path": path[::-1], "yaml_root": root,
                                "yaml_children": count(k)}
        if parents[k] is not None:
            meta["under"] = offset + parents[k]  # type: ignore[operator]
        out.append(line_piece(group, "code", paragraph, meta, indent=True))
    return out

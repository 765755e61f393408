"""A self-contained HTML report of one compression run: what happened to every piece.

Each source is shown as it was segmented, every segment coloured by its status (kept,
compressed, folded, dropped, merged, reverted); words removed by token compression and lines
removed by folding are struck through inside the segment; protected spans are outlined and
name the rule that protected them. Hovering a segment shows its reasons and score; clicking it
fills the side panel (so does a link to ``report.html#seg-<segment id>``). A bar chart shows tokens per source and per layer before and after, and
a gauge shows the budget use.

The file is one page with inline CSS and JS only: no network, no CDN, no external fonts.
The legend carries ``data-status`` / ``data-count`` attributes whose numbers are counted from
the delivery record (so tests can compare them), and the page's script writes the number of
segments it actually rendered per status into ``data-rendered`` beside them.

>>> from odcf.report.html import render_html
>>> page = render_html(result.document, result.record)      # doctest: +SKIP
>>> open("report.html", "w", encoding="utf-8").write(page)  # doctest: +SKIP

Same document and record give byte-identical HTML (no timestamps, no random ids).
"""
from __future__ import annotations

import difflib
import html
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from odcf.document import STATUSES, Document, Segment, Span

#: Legend order and the words the page uses for each status.
STATUS_LABELS: dict[str, str] = {
    "verbatim": "kept verbatim",
    "compressed": "compressed",
    "folded": "folded",
    "dropped": "dropped",
    "merged": "merged (duplicate)",
    "reverted": "reverted",
}

_WORD = re.compile(r"\w+|[^\w\s]+|\s+")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def record_status_counts(record: Mapping[str, Any]) -> dict[str, int]:
    """Segments per status, counted from the delivery record (the numbers the legend shows)."""
    counts: Counter[str] = Counter()
    for src in record.get("sources", ()):
        for seg in src.get("segments", ()):
            counts[str(seg.get("status"))] += 1
    return {s: counts.get(s, 0) for s in STATUSES} | {k: v for k, v in counts.items() if k not in STATUSES}


def record_protected_count(record: Mapping[str, Any]) -> int:
    """Protected spans listed in the record, over all segments."""
    return sum(len(seg.get("protected", ()) or ()) for src in record.get("sources", ()) for seg in src.get("segments", ()))


# -- segment bodies ----------------------------------------------------------------------

def _protected_html(text: str, spans: Sequence[Span], offset: int = 0) -> str:
    """*text* (a slice of the segment's original starting at *offset*) with protected spans marked."""
    out: list[str] = []
    pos = 0
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        start, end = span.start - offset, span.end - offset
        if end <= 0 or start >= len(text) or start < pos:
            continue  # outside this slice, or nested in a span already drawn
        start = max(start, 0)
        end = min(end, len(text))
        out.append(_e(text[pos:start]))
        out.append(
            f'<mark class="prot" data-rule="{_e(span.rule)}" title="protected by {_e(span.rule)}">'
            f"{_e(text[start:end])}</mark>"
        )
        pos = end
    out.append(_e(text[pos:]))
    return "".join(out)


def _pieces_with_offsets(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0)) for m in _WORD.finditer(text)]


def _diff_html(original: str, current: str, spans: Sequence[Span], unit: str) -> tuple[str, int]:
    """Original text with the parts missing from *current* struck through; returns (html, cut units).

    *unit* is ``word`` (token compression) or ``line`` (folding, where the fold marker is shown
    as an insertion).
    """
    if unit == "line":
        a = original.splitlines(keepends=True)
        b = current.splitlines(keepends=True)
        offs, pos = [], 0
        for piece in a:
            offs.append(pos)
            pos += len(piece)
        a_pieces = list(zip(offs, a))
    else:
        a_pieces = _pieces_with_offsets(original)
        a = [p for _, p in a_pieces]
        b = [p for _, p in _pieces_with_offsets(current)]
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    out: list[str] = []
    cut = 0
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if i2 > i1:
            start = a_pieces[i1][0]
            chunk = "".join(a[i1:i2])
            body = _protected_html(chunk, spans, offset=start)
            if op == "equal":
                out.append(body)
            else:
                cut += sum(1 for p in a[i1:i2] if p.strip())
                out.append(f'<del class="cut">{body}</del>')
        if op in ("insert", "replace") and j2 > j1:
            added = "".join(b[j1:j2])
            if added.strip():
                out.append(f'<ins class="add">{_e(added)}</ins>')
    return "".join(out), cut


def _segment_html(seg: Segment, rec: Mapping[str, Any] | None) -> tuple[str, int]:
    status = seg.status
    cut = 0
    if status == "compressed" and seg.text != seg.original:
        body, cut = _diff_html(seg.original, seg.text, seg.protected, "word")
    elif status == "folded" and seg.text != seg.original:
        body, cut = _diff_html(seg.original, seg.text, seg.protected, "line")
    else:
        body = _protected_html(seg.original, seg.protected)
    reasons = list(seg.reasons)
    score = "" if seg.score is None else f"{seg.score:.3f}"
    rules = sorted({sp.rule for sp in seg.protected})
    title_lines = [f"{seg.id} · {STATUS_LABELS.get(status, status)}"]
    if score:
        title_lines.append(f"score {score}")
    if rec is not None and "tokens_in" in rec:
        title_lines.append(f"tokens {rec.get('tokens_in')} → {rec.get('tokens_out')}")
    if rules:
        title_lines.append("protected: " + ", ".join(rules))
    title_lines.extend(reasons)
    attrs = {
        "class": f"seg st-{status}",
        "id": f"seg-{seg.id}",
        "data-seg": seg.id,
        "data-status": status,
        "data-score": score,
        "data-reasons": json.dumps(reasons, ensure_ascii=False),
        "data-rules": json.dumps(rules, ensure_ascii=False),
        "data-cut": str(cut),
        "data-tokens-in": "" if rec is None else str(rec.get("tokens_in", "")),
        "data-tokens-out": "" if rec is None else str(rec.get("tokens_out", "")),
        "title": "\n".join(title_lines),
        "tabindex": "0",
    }
    attr_text = " ".join(f'{k}="{_e(v)}"' for k, v in attrs.items())
    return f"{_e(seg.sep)}<span {attr_text}>{body}</span>", cut


# -- charts --------------------------------------------------------------------------------

def _bars(rows: Sequence[tuple[str, int, int]], scale: int, css: str) -> str:
    """CSS bar chart rows: label, tokens before, tokens after."""
    out = [f'<table class="bars {css}">']
    for label, before, after in rows:
        w_in = 100.0 * before / scale if scale else 0.0
        w_out = 100.0 * after / scale if scale else 0.0
        out.append(
            f'<tr data-label="{_e(label)}" data-tokens-in="{before}" data-tokens-out="{after}">'
            f'<th title="{_e(label)}">{_e(label)}</th>'
            f'<td><div class="bar in" style="width:{w_in:.2f}%"></div>'
            f'<div class="bar out" style="width:{w_out:.2f}%"></div></td>'
            f'<td class="num">{before} → {after}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _budget_html(record: Mapping[str, Any]) -> str:
    budget = record.get("budget")
    used = int(record.get("tokens_out") or 0)
    unit = record.get("unit") or "tokens"
    if not budget:
        return f'<div class="budget" data-used="{used}"><p>{used} {_e(unit)} delivered; no budget set.</p></div>'
    pct = 100.0 * used / budget
    over = bool(record.get("over_budget"))
    cls = "over" if over else "ok"
    note = f" — over budget by {int(record.get('over_by') or 0)}" if over else ""
    return (
        f'<div class="budget {cls}" data-used="{used}" data-budget="{budget}">'
        f'<div class="gauge"><div class="fill" style="width:{min(pct, 100.0):.2f}%"></div></div>'
        f"<p>{used} / {budget} {_e(unit)} ({pct:.1f}%){_e(note)}</p></div>"
    )


# -- page ------------------------------------------------------------------------------------

_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;background:#f6f7f9}
header{padding:14px 20px;background:#1f2a44;color:#fff}
header h1{margin:0;font-size:18px}
header p{margin:4px 0 0;color:#c9d2e6;font-size:12px}
main{display:grid;grid-template-columns:minmax(0,1fr) 340px;gap:16px;padding:16px 20px}
section.card,aside .card{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:12px 14px;margin-bottom:16px}
h2{font-size:15px;margin:0 0 8px}
h3{font-size:13px;margin:0 0 6px;color:#44506a}
.text{white-space:pre-wrap;font:13px/1.55 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-word}
.seg{border-radius:3px;cursor:pointer;padding:0 1px}
.seg:focus,.seg.sel{outline:2px solid #1f6feb}
.st-verbatim{background:#e3f5e6}
.st-compressed{background:#fff4cc}
.st-folded{background:#e4ecff}
.st-dropped{background:#f3f3f3;color:#8a8f98;text-decoration:line-through}
.st-merged{background:#f1e6fb;color:#7a6b8c;text-decoration:line-through}
.st-reverted{background:#ffe1cf}
del.cut{color:#b42318;background:#fde2df;text-decoration:line-through}
ins.add{color:#1a4fb5;text-decoration:none;font-weight:600}
mark.prot{background:transparent;border-bottom:2px solid #c01d7a;color:inherit;font-weight:600}
ul.legend{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:6px 14px}
ul.legend li{display:flex;align-items:center;gap:6px;font-size:13px}
.sw{display:inline-block;width:14px;height:14px;border-radius:3px;border:1px solid #c8ccd4}
.sw.prot{border:0;border-bottom:3px solid #c01d7a;border-radius:0}
.sw.cut{background:#fde2df}
table.bars{width:100%;border-collapse:collapse;font-size:12px}
table.bars th{text-align:left;font-weight:500;max-width:120px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding:2px 6px 2px 0}
table.bars td{padding:2px 0;width:60%}
table.bars td.num{width:auto;text-align:right;white-space:nowrap;padding-left:6px}
.bar{height:7px;border-radius:2px;margin:1px 0}
.bar.in{background:#aab4c8}
.bar.out{background:#1f6feb}
.gauge{height:12px;background:#e6e9ef;border-radius:6px;overflow:hidden}
.gauge .fill{height:100%;background:#2da44e}
.budget.over .gauge .fill{background:#cf222e}
#panel dl{margin:0;font-size:12px}
#panel dt{font-weight:600;margin-top:6px}
#panel dd{margin:0 0 0 8px;white-space:pre-wrap;word-break:break-word}
.src-head{font-size:12px;color:#44506a;margin-bottom:6px}
.muted{color:#6b7385;font-size:12px}
"""

_JS = """
(function(){
  var segs=document.querySelectorAll('.seg');
  var seen={};
  for(var i=0;i<segs.length;i++){var s=segs[i].getAttribute('data-status');seen[s]=(seen[s]||0)+1;}
  var items=document.querySelectorAll('ul.legend li[data-status]');
  for(var j=0;j<items.length;j++){var st=items[j].getAttribute('data-status');items[j].setAttribute('data-rendered',String(seen[st]||0));}
  var prot=document.querySelector('ul.legend li[data-kind="protected"]');
  if(prot){prot.setAttribute('data-rendered',String(document.querySelectorAll('mark.prot').length));}
  var panel=document.getElementById('panel-body');
  function row(k,v){return '<dt>'+k+'</dt><dd>'+v+'</dd>';}
  function esc(t){return String(t).replace(/[&<>"]/g,function(c){return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
  function show(el){
    var prev=document.querySelector('.seg.sel'); if(prev){prev.classList.remove('sel');}
    el.classList.add('sel');
    var reasons=JSON.parse(el.getAttribute('data-reasons')||'[]');
    var rules=JSON.parse(el.getAttribute('data-rules')||'[]');
    var h='<dl>'+row('segment',esc(el.getAttribute('data-seg')))+row('status',esc(el.getAttribute('data-status')));
    if(el.getAttribute('data-score')){h+=row('score',esc(el.getAttribute('data-score')));}
    if(el.getAttribute('data-tokens-in')){h+=row('tokens',esc(el.getAttribute('data-tokens-in'))+' \\u2192 '+esc(el.getAttribute('data-tokens-out')));}
    if(el.getAttribute('data-cut')!=='0'){h+=row('cut',esc(el.getAttribute('data-cut'))+' words/lines');}
    h+=row('protected by',rules.length?esc(rules.join(', ')):'nothing');
    h+=row('reasons',reasons.length?reasons.map(esc).join('<br>'):'none recorded');
    panel.innerHTML=h+'</dl>';
  }
  for(var k=0;k<segs.length;k++){
    segs[k].addEventListener('click',function(ev){show(ev.currentTarget);});
    segs[k].addEventListener('keydown',function(ev){if(ev.key==='Enter'){show(ev.currentTarget);}});
  }
  if(location.hash.indexOf('#seg-')===0){
    var target=document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if(target){show(target);target.scrollIntoView();}
  }
  document.body.setAttribute('data-ready','1');
})();
"""


def render_html(
    document: Document,
    record: Mapping[str, Any] | None = None,
    *,
    title: str | None = None,
    health: Mapping[str, Any] | None = None,
) -> str:
    """The report page for one run, as a string.

    *document* is the final document of a run (``result.document``); *record* is its delivery
    record (defaults to ``document.meta['record']``). *health* is an optional
    ``HealthReport.to_dict()`` whose headline figures are shown above the text.
    """
    if record is None:
        record = document.meta.get("record")
    if not isinstance(record, Mapping):
        raise ValueError("render_html needs a delivery record: the document has no meta['record'] (did assemble run?)")
    source_blocks, total_cut = _source_blocks(document, record)
    legend = _legend(record_status_counts(record), record_protected_count(record), total_cut)
    src_rows, layer_rows = _token_rows(record)
    scale = max([r[1] for r in src_rows] + [r[2] for r in src_rows] + [1])
    lscale = max([r[1] for r in layer_rows] + [r[2] for r in layer_rows] + [1])
    health_html = _health_html(health)
    warnings = list(record.get("warnings", ())) + [f"missing: {m}" for m in record.get("missing", ())]
    warn_html = ""
    if warnings:
        warn_html = '<div class="card"><h2>Warnings</h2><ul>' + "".join(f"<li>{_e(w)}</li>" for w in warnings) + "</ul></div>"

    page_title = title or f"odcf report — {record.get('domain', '')}"
    meta_line = (
        f"domain {record.get('domain', '?')} · plan {str(record.get('plan_hash', ''))[:12]} · role "
        f"{record.get('role') or 'default'} · scorer {record.get('scorer') or '?'} · "
        f"{record.get('tokens_in', '?')} → {record.get('tokens_out', '?')} {record.get('unit') or 'tokens'}"
    )
    if record.get("query"):
        meta_line += f" · query: {record['query']}"

    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        f"<title>{_e(page_title)}</title><style>{_CSS}</style></head>\n<body>"
        f"<header><h1>{_e(page_title)}</h1><p>{_e(meta_line)}</p></header>\n<main><div>"
        f'<section class="card"><h2>Legend</h2>{"".join(legend)}</section>'
        f"{''.join(source_blocks)}</div>\n<aside>"
        f'<div class="card" id="budget-card"><h2>Budget</h2>{_budget_html(record)}</div>'
        f'<div class="card"><h2>Tokens per source</h2>{_bars(src_rows, scale, "by-source")}</div>'
        f'<div class="card"><h2>Tokens per layer</h2>{_bars(layer_rows, lscale, "by-layer")}</div>'
        f"{health_html}{warn_html}"
        '<div class="card" id="panel"><h2>Segment</h2><div id="panel-body" class="muted">'
        "Click a segment to see its status, score, protection and reasons.</div></div>"
        f"</aside></main>\n<script>{_JS}</script></body></html>\n"
    )


def _source_blocks(document: Document, record: Mapping[str, Any]) -> tuple[list[str], int]:
    """One card per source with its segments marked up, and the words/lines cut inside segments."""
    rec_sources = {str(s.get("id")): s for s in record.get("sources", ())}
    rec_segments = {
        str(seg.get("id")): seg for s in record.get("sources", ()) for seg in s.get("segments", ())
    }
    total_cut = 0
    blocks: list[str] = []
    for src in document.sources:
        rsrc = rec_sources.get(src.id, {})
        parts: list[str] = []
        for seg in document.segments_of(src.id):
            piece, cut = _segment_html(seg, rec_segments.get(seg.id))
            total_cut += cut
            parts.append(piece)
        kind = f"{src.meta['original_kind']} → {src.kind} (source rules)" if src.meta.get("original_kind") else src.kind
        head = (
            f'<div class="src-head">{_e(src.label)} · {_e(kind)} · layer {_e(src.layer)}'
            f" · {_e(rsrc.get('status', ''))} · {rsrc.get('tokens_in', '?')} → {rsrc.get('tokens_out', '?')} tokens</div>"
        )
        blocks.append(
            f'<section class="card source" data-source="{_e(src.id)}"><h2>{_e(src.id)}</h2>{head}'
            f'<div class="text">{"".join(parts) or "<span class=muted>(no segments)</span>"}</div></section>'
        )
    return blocks, total_cut


def _legend(counts: Mapping[str, int], n_protected: int, total_cut: int) -> list[str]:
    legend = ['<ul class="legend" id="legend">']
    for status in STATUSES:
        legend.append(
            f'<li data-status="{status}" data-count="{counts.get(status, 0)}">'
            f'<span class="sw st-{status}"></span>{_e(STATUS_LABELS[status])}: <b>{counts.get(status, 0)}</b></li>'
        )
    legend.append(
        f'<li data-kind="protected" data-count="{n_protected}"><span class="sw prot"></span>'
        f"protected spans: <b>{n_protected}</b></li>"
    )
    legend.append(
        f'<li data-kind="cut" data-count="{total_cut}"><span class="sw cut"></span>'
        f"words/lines cut inside segments: <b>{total_cut}</b></li>"
    )
    legend.append("</ul>")
    return legend


def _token_rows(record: Mapping[str, Any]) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
    """(name, tokens in, tokens out) per source and per layer."""
    src_rows = [
        (str(s.get("id")), int(s.get("tokens_in") or 0), int(s.get("tokens_out") or 0))
        for s in record.get("sources", ())
    ]
    layer_tot: dict[str, list[int]] = {}
    for s in record.get("sources", ()):
        acc = layer_tot.setdefault(str(s.get("layer")), [0, 0])
        acc[0] += int(s.get("tokens_in") or 0)
        acc[1] += int(s.get("tokens_out") or 0)
    return src_rows, [(k, v[0], v[1]) for k, v in layer_tot.items()]


def _health_html(health: Mapping[str, Any] | None) -> str:
    if not health:
        return ""
    lows = len(health.get("low_density", ()))
    return (
        '<div class="card" id="health"><h2>Health</h2><p class="muted">'
        f"{health.get('tokens_total', '?')} tokens in · {len(health.get('prefixes', ()))} repeated prefixes · "
        f"{len(health.get('boilerplate', ()))} boilerplate lines · {len(health.get('noise', ()))} noise findings · "
        f"{lows} low-density regions</p></div>"
    )

"""The HTML report in headless Chromium (Debian's `chromium`): it renders, its legend counts match the
record, and its screenshot is not blank. `make test` installs chromium first (.ci/ensure-chromium.sh);
the tests skip, saying why, only when chromium cannot be found."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from odcf.compressor import Compressor
from odcf.report.html import record_protected_count, record_status_counts, render_html

from .test_report_html import _all_statuses_doc

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not installed (run .ci/ensure-chromium.sh or `apt-get install chromium`)",
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def dump_dom(page: Path, tmp_path: Path, fragment: str = "") -> str:
    proc = _chromium(tmp_path, "--dump-dom", page.resolve().as_uri() + fragment)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(page: Path, tmp_path: Path, name: str = "shot.png") -> Path:
    png = tmp_path / name
    proc = _chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,900", "--virtual-time-budget=3000",
                     page.resolve().as_uri())
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    return png


def decode_png(path: Path) -> np.ndarray:
    """RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium writes), decoded with zlib only."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            channels = 3 if colour == 2 else 4
        elif ctype == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        row = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        ftype, line = row[0], np.frombuffer(row[1:], dtype=np.uint8).astype(np.int64)
        if ftype == 0:
            cur = line
        elif ftype == 2:
            cur = (line + prev) & 0xFF
        else:  # Sub, Average and Paeth depend on the pixel to the left: go byte by byte
            cur = np.zeros(stride, dtype=np.int64)
            bl = line.tolist()
            up = prev.tolist()
            c = [0] * stride
            for x in range(stride):
                left = c[x - channels] if x >= channels else 0
                if ftype == 1:
                    c[x] = (bl[x] + left) & 0xFF
                elif ftype == 3:
                    c[x] = (bl[x] + ((left + up[x]) >> 1)) & 0xFF
                else:
                    ul = up[x - channels] if x >= channels else 0
                    p = left + up[x] - ul
                    pa, pb, pc = abs(p - left), abs(p - up[x]), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else (up[x] if pb <= pc else ul)
                    c[x] = (bl[x] + pred) & 0xFF
            cur = np.array(c, dtype=np.int64)
        out[y] = cur
        prev = cur
    return out.reshape(height, width, channels)[:, :, :3]


def looks_blank(pixels: np.ndarray) -> tuple[bool, int, float]:
    """(blank?, distinct colours, luminance std): a page with text, colours and bars is far from blank."""
    flat = pixels.reshape(-1, 3).astype(np.int64)
    colours = len(np.unique(flat[:, 0] << 16 | flat[:, 1] << 8 | flat[:, 2]))
    lum = 0.299 * flat[:, 0] + 0.587 * flat[:, 1] + 0.114 * flat[:, 2]
    std = float(lum.std())
    return colours < 16 or std < 5.0, colours, std


def _legend(dom: str) -> dict[str, tuple[int, int]]:
    out = {}
    for m in re.finditer(r'<li data-(status|kind)="(\w+)" data-count="(\d+)"([^>]*)>', dom):
        rendered = re.search(r'data-rendered="(\d+)"', m.group(4))
        out[m.group(2)] = (int(m.group(3)), int(rendered.group(1)) if rendered else -1)
    return out


def test_rendered_legend_matches_the_record(plan, tmp_path):
    doc = _all_statuses_doc(plan)
    record = doc.meta["record"]
    page = tmp_path / "report.html"
    page.write_text(render_html(doc, record), encoding="utf-8")
    dom = dump_dom(page, tmp_path)
    assert 'data-ready="1"' in dom  # the page's script ran
    legend = _legend(dom)
    for status, n in record_status_counts(record).items():
        assert legend[status] == (n, n), status  # the record's count, and what the browser rendered
    assert legend["protected"][0] == record_protected_count(record)
    assert legend["protected"][1] == record_protected_count(record)  # no nested spans in this fixture


def test_the_side_panel_shows_reasons_and_score(plan, tmp_path):
    doc = _all_statuses_doc(plan)
    page = tmp_path / "report.html"
    page.write_text(render_html(doc), encoding="utf-8")
    dom = dump_dom(page, tmp_path, "#seg-s%230")  # a link to segment s#0 opens it in the panel
    panel = re.search(r'<div id="panel-body"[^>]*>(.*?)</div>', dom, re.S).group(1)
    assert "<dt>score</dt><dd>0.900</dd>" in panel
    assert "rank: score 0.90" in panel and "anchor:money" in panel
    assert 'class="seg st-verbatim sel"' in dom


def test_a_real_run_renders_and_is_not_blank(plan, stage_switches, contract_text, tmp_path):
    result = Compressor(plan, stages=stage_switches).compress(
        [contract_text, "The parties met in Paris. Nothing else was agreed."], budget=60)
    page = tmp_path / "run.html"
    page.write_text(render_html(result.document, result.record), encoding="utf-8")
    dom = dump_dom(page, tmp_path)
    legend = _legend(dom)
    for status, n in record_status_counts(result.record).items():
        assert legend[status] == (n, n), status
    blank, colours, std = looks_blank(decode_png(screenshot(page, tmp_path)))
    assert not blank, f"screenshot looks blank: {colours} colours, luminance std {std:.1f}"


def test_the_blank_check_can_fail(tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><body style='background:#fff'></body></html>", encoding="utf-8")
    blank, colours, _ = looks_blank(decode_png(screenshot(page, tmp_path, "blank.png")))
    assert blank and colours <= 2

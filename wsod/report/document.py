"""A tiny document model rendered twice: Markdown (images linked) and self-contained HTML
(images embedded as base64 PNG), so ``report.md`` and ``report.html`` always say the same.

In HTML, nothing runs off the page's right edge: text (a path in a paragraph, a table's paths
and commands) wraps, at a ``/`` or a space where it can, ``<pre>`` blocks wrap long lines with
a hanging indent, and each table sits in a horizontally scrolling box in case a column cannot
wrap. Columns of numbers are right-aligned and kept on one line, text columns left-aligned. A
table cell written as Markdown bold (``**mean**``) is bold in both renderings, and inline code
(```wsod data```) in a paragraph, callout or list item is ``<code>`` in HTML.
"""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Sequence
from pathlib import Path

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;
overflow-wrap:break-word}
.table{max-width:100%;overflow-x:auto;margin:.5em 0}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
tr:nth-child(even){background:#f6f6f6}
.warn{background:#fde2e1;border-left:4px solid #d62728;padding:.4em .8em;font-weight:600}
.ok{background:#e3f4e1;border-left:4px solid #2ca02c;padding:.4em .8em}
img{max-width:100%} figure{margin:1em 0} figcaption{font-size:12px;color:#555}
pre{background:#f4f4f4;padding:.5em;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
code{background:#f4f4f4;padding:0 .2em;font-size:90%;overflow-wrap:anywhere}
pre>span{display:block;padding-left:2em;text-indent:-2em}
"""
_NUM_COLS = 16  # columns after this one get no column styles
_CSS += "".join(
    f".n{k} td:nth-child({k}){{text-align:right;white-space:nowrap}}"
    f".n{k} th:nth-child({k}){{text-align:right}}"
    f".w{k} td:nth-child({k}){{overflow-wrap:anywhere}}"
    for k in range(2, _NUM_COLS + 1)
)
_LONG_TOKEN = 24  # a column with a longer word (between spaces and "/") may break it anywhere
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_CODE = re.compile(r"`([^`]+)`")
# a number-like cell: digits and separators, "n/a", "–", a unit or "max" (at most 3 letters)
_NUMERIC = re.compile(r"[^A-Za-z]*(?:[A-Za-z][^A-Za-z]*){0,3}")


def inline(text: str) -> str:
    """Text as HTML: escaped, Markdown inline code (```wsod data --boxes```) as ``<code>``, so
    the HTML says what report.md renders (paragraphs, callouts, list items)."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))


def numeric_column(cells: Sequence[str]) -> bool:
    """True when most non-empty cells of a column read as numbers (right-aligned in HTML);
    text such as paths, commands and names has more letters."""
    cells = [c for c in cells if c and not _BOLD.fullmatch(c)]
    hits = sum(
        bool(_NUMERIC.fullmatch(c)) and any(ch.isdigit() or ch in "–-" for ch in c) for c in cells
    )
    return bool(cells) and hits * 2 > len(cells)


def _cell(text: str, tag: str, numeric: bool) -> str:
    """One HTML table cell: escaped, ``**bold**`` as ``<strong>``, text breakable after ``/``."""
    bold = _BOLD.fullmatch(text)
    body = html.escape(bold.group(1) if bold else text)
    if not numeric:
        body = body.replace("/", "/<wbr>")
    if bold:
        body = f"<strong>{body}</strong>"
    return f"<{tag}>{body}</{tag}>"


def column_classes(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The CSS classes of a table's columns: ``nK`` numeric (right-aligned, one line), ``wK``
    text with a long word (a path segment, a commit), which may break anywhere; K counts from 1
    and the first column, the row labels, is always plain text. Only such columns get
    ``overflow-wrap:anywhere``, so the table's layout never squeezes short words apart."""
    css = []
    for i in range(1, min(len(header), _NUM_COLS)):
        cells = [r[i] for r in rows if i < len(r)]
        if numeric_column(cells):
            css.append(f"n{i + 1}")
        elif any(len(w) > _LONG_TOKEN for c in cells for w in re.split(r"[\s/]+", c)):
            css.append(f"w{i + 1}")
    return " ".join(css)


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table in its scrolling box, whose classes style the columns (:func:`column_classes`)."""
    css = column_classes(header, rows)
    num = [f"n{i + 1}" in css.split() for i in range(len(header))]
    head = "".join(_cell(h, "th", n) for h, n in zip(header, num, strict=True))
    body = "".join(
        "<tr>" + "".join(_cell(v, "td", n) for v, n in zip(r, num, strict=False)) + "</tr>"
        for r in rows
    )
    return (
        f"<div class='table {css}'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


class Document:
    """Blocks in order: headings, paragraphs, callouts, lists, tables, images, code."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.blocks: list[tuple] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("h", level, text))

    def para(self, text: str) -> None:
        self.blocks.append(("p", text))

    def callout(self, text: str, warn: bool = False) -> None:
        self.blocks.append(("callout", text, warn))

    def bullets(self, items: Sequence[str]) -> None:
        self.blocks.append(("ul", list(items)))

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.blocks.append(("table", list(header), [list(r) for r in rows]))

    def image(self, path: str | os.PathLike, caption: str) -> None:
        self.blocks.append(("img", Path(path), caption))

    def code(self, text: str) -> None:
        self.blocks.append(("code", text))

    # ------------------------------------------------------------------ renderers
    def markdown(self, base: str | os.PathLike) -> str:
        """Markdown with images linked relative to ``base`` (the report's folder)."""
        out = [f"# {self.title}", ""]
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out += ["#" * b[1] + " " + b[2], ""]
            elif kind == "p":
                out += [b[1], ""]
            elif kind == "callout":
                out += [("> **" + b[1] + "**") if b[2] else ("> " + b[1]), ""]
            elif kind == "ul":
                out += [f"- {item}" for item in b[1]] + [""]
            elif kind == "table":
                out.append("| " + " | ".join(b[1]) + " |")
                out.append("|" + "|".join("---" for _ in b[1]) + "|")
                out += ["| " + " | ".join(r) + " |" for r in b[2]] + [""]
            elif kind == "img":
                rel = os.path.relpath(b[1], base)
                out += [f"![{b[2]}]({rel})", "", f"*{b[2]}*", ""]
            elif kind == "code":
                out += ["```", b[1], "```", ""]
        return "\n".join(out)

    def html(self) -> str:
        """Self-contained HTML: every image inlined as ``data:image/png;base64``."""
        e = html.escape
        out = [
            "<!DOCTYPE html>",
            "<html><head><meta charset='utf-8'>",
            f"<title>{e(self.title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{e(self.title)}</h1>",
        ]
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
            elif kind == "p":
                out.append(f"<p>{inline(b[1])}</p>")
            elif kind == "callout":
                out.append(f"<p class='{'warn' if b[2] else 'ok'}'>{inline(b[1])}</p>")
            elif kind == "ul":
                out.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in b[1]) + "</ul>")
            elif kind == "table":
                out.append(html_table(b[1], b[2]))
            elif kind == "img":
                data = base64.b64encode(Path(b[1]).read_bytes()).decode("ascii")
                out.append(
                    f"<figure><img alt='{e(b[2])}' src='data:image/png;base64,{data}'>"
                    f"<figcaption>{e(b[2])}</figcaption></figure>"
                )
            elif kind == "code":
                # one block per line: a wrapped line continues indented under its start
                out.append(
                    "<pre>" + "".join(f"<span>{e(x)}\n</span>" for x in b[1].split("\n")) + "</pre>"
                )
        out.append("</body></html>")
        return "\n".join(out)

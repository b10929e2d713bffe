"""A tiny document model rendered twice: Markdown (images linked) and self-contained HTML
(images embedded as base64 PNG), so ``report.md`` and ``report.html`` always say the same."""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Sequence
from pathlib import Path

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th:first-child,td:first-child{text-align:left}
tr:nth-child(even){background:#f6f6f6}
.warn{background:#fde2e1;border-left:4px solid #d62728;padding:.4em .8em;font-weight:600}
.ok{background:#e3f4e1;border-left:4px solid #2ca02c;padding:.4em .8em}
img{max-width:100%} figure{margin:1em 0} figcaption{font-size:12px;color:#555}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto;font-size:12px}
"""


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
                out.append(f"<p>{e(b[1])}</p>")
            elif kind == "callout":
                out.append(f"<p class='{'warn' if b[2] else 'ok'}'>{e(b[1])}</p>")
            elif kind == "ul":
                out.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in b[1]) + "</ul>")
            elif kind == "table":
                head = "".join(f"<th>{e(h)}</th>" for h in b[1])
                body = "".join(
                    "<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in b[2]
                )
                out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            elif kind == "img":
                data = base64.b64encode(Path(b[1]).read_bytes()).decode("ascii")
                out.append(
                    f"<figure><img alt='{e(b[2])}' src='data:image/png;base64,{data}'>"
                    f"<figcaption>{e(b[2])}</figcaption></figure>"
                )
            elif kind == "code":
                out.append(f"<pre>{e(b[1])}</pre>")
        out.append("</body></html>")
        return "\n".join(out)

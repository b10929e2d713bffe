"""The report's document model: HTML tables without Markdown markup, columns styled by content."""

from __future__ import annotations

import re

from wsod.report.document import Document, column_classes, html_table, numeric_column

LONG_PATH = "/home/user/work_dirs/voc07_cpu_a_long_run_name_without_spaces/eval/metrics.json"


def test_numeric_column_tells_numbers_from_text():
    assert numeric_column(["54.5", "–", "100.0"])
    assert numeric_column(["0:07.0 (7.0 s)", "n/a", "max 2048.5", "**total**"])
    assert numeric_column(["100.0 / 100.0 / 100.0", "– / – / –", "AP 100.0 (11-pt, train)"])
    assert numeric_column(["2026-12-02T19:36:28+0000", "3", "None"])
    assert not numeric_column(["data/train.json", "weak/weak_model.json"])
    assert not numeric_column(["wsod weak --work-dir RUN/weak", "448fced"])
    assert not numeric_column(["", "**mean**"])  # nothing but labels: not a number column


def test_column_classes_number_and_long_word_columns():
    header = ["input", "file", "stage", "commit", "seed"]
    rows = [
        ["metrics", LONG_PATH, "evaluate", "448fced0d1f098d70391f2a28d15d3846cb75620", "None"],
        ["gt", "data/val_gt.json", "data", "448fced0d1f098d70391f2a28d15d3846cb75620", "0"],
        ["weak", "weak/val_dets.json", "weak", "448fced0d1f098d70391f2a28d15d3846cb75620", "3"],
    ]
    # file: a long path segment, commit: one long word; stage: short words; seed: numbers
    assert column_classes(header, rows).split() == ["w2", "w4", "n5"]
    assert column_classes(["class", "AP"], [["**mAP**", "50.0"]]) == "n2"  # labels stay text


def test_html_table_bold_cells_and_breakable_paths():
    rows = [["cat", "data/cat.json", "54.5"], ["**mAP (11-point)**", "", "59.7"]]
    out = html_table(["class", "file", "strong/weak"], rows)
    assert "**" not in out
    assert "<td><strong>mAP (11-point)</strong></td>" in out
    assert "<td>data/<wbr>cat.json</td>" in out  # text: a break opportunity after "/"
    assert "<th>strong/weak</th>" in out and "<td>54.5</td>" in out  # numbers: untouched
    assert out.startswith("<div class='table n3'><table>")
    # the page's text is the cells' text: without tags, every cell reads as written
    cells = re.findall(r"<t[hd]>(.*?)</t[hd]>", out)
    assert [re.sub(r"<[^>]+>", "", c) for c in cells] == [
        "class",
        "file",
        "strong/weak",
        "cat",
        "data/cat.json",
        "54.5",
        "mAP (11-point)",
        "",
        "59.7",
    ]


def test_markdown_keeps_bold_and_html_wraps_code_lines():
    doc = Document("t")
    doc.table(["class", "AP"], [["**mAP**", "50.0"]])
    doc.code(f"weak: wsod weak --out {LONG_PATH}\nstrong: wsod strong")
    md, html = doc.markdown("."), doc.html()
    assert "| **mAP** | 50.0 |" in md
    assert "**" not in html and "<strong>mAP</strong>" in html
    # one block per line (hanging indent when it wraps); the text is unchanged
    pre = re.search(r"<pre>(.*)</pre>", html, re.S).group(1)
    assert pre.count("<span>") == 2
    assert re.sub(r"</?span>", "", pre) == (
        f"weak: wsod weak --out {LONG_PATH}\nstrong: wsod strong\n"
    )
    assert "white-space:pre-wrap" in html and "overflow-wrap:anywhere" in html

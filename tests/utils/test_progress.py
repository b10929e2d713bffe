"""wsod.utils.progress: a tqdm bar on a terminal, a plain line every few percent elsewhere."""

from __future__ import annotations

import io

import pytest
from tqdm import tqdm

from wsod.utils.progress import LineProgress, is_terminal, progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_gets_a_tqdm_bar_with_carriage_returns():
    stream = FakeTTY()
    items = list(progress(range(50), desc="predict", unit="img", file=stream, mininterval=0))
    assert items == list(range(50))
    text = stream.getvalue()
    assert "\r" in text and "predict" in text and "50/50" in text
    assert isinstance(progress(range(3), file=stream), tqdm)


def test_log_gets_one_line_every_ten_percent():
    stream = io.StringIO()
    seen = list(progress(range(200), desc="predict", unit="img", file=stream))
    assert seen == list(range(200))
    text = stream.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    # 10 %, 20 %, ..., 100 %: one line each, the last one at 200/200 and no repeat on close
    assert len(lines) == 10, lines
    assert [int(ln.split("%")[0].split()[-1]) for ln in lines] == list(range(10, 101, 10))
    assert all(ln.startswith("predict: ") and "img" in ln for ln in lines)
    assert lines[-1].split("%")[1].split()[0] == "200/200"


def test_log_lines_follow_update_and_every():
    stream = io.StringIO()
    with progress(total=1000, desc="download", unit="B", file=stream, every=25) as bar:
        assert isinstance(bar, LineProgress)
        for _ in range(10):
            bar.update(60)  # 600 of 1000: 25 % and 50 % crossed
        assert bar.n == 600 and bar.lines == 2
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and " 60% 600/1000" in lines[-1]  # close says where it stopped


def test_unknown_total_prints_by_time_and_on_close():
    stream = io.StringIO()
    bar = progress(iter(range(5)), desc="scan", file=stream, interval=3600)
    assert sum(1 for _ in bar) == 5
    (line,) = stream.getvalue().splitlines()
    assert line.startswith("scan: 5 ") and "it" in line
    stream = io.StringIO()
    bar = progress(total=None, desc="scan", file=stream, interval=0)
    bar.update(2)
    bar.update(3)
    bar.close()
    bar.close()  # closing twice prints once
    assert len(stream.getvalue().splitlines()) == 3


def test_disable_prints_nothing_and_helpers():
    stream = io.StringIO()
    assert list(progress([1, 2], file=stream, disable=True)) == [1, 2]
    assert stream.getvalue() == ""
    assert is_terminal(FakeTTY()) and not is_terminal(io.StringIO()) and not is_terminal(None)
    with pytest.raises(ValueError, match="every"):
        LineProgress([], file=stream, every=0)

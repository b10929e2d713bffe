"""``fetch_voc07`` against tarballs the test builds itself, served by file:// URLs (no network)."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from wsod.datasets.download import DownloadError, fetch_voc07, main


def _tar(path: Path, files: dict[str, bytes]) -> str:
    with tarfile.open(path, "w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture()
def tarballs(tmp_path: Path) -> tuple[list[str], list[str]]:
    src = tmp_path / "server"
    src.mkdir()
    md5_a = _tar(
        src / "VOCtrainval_06-Nov-2007.tar",
        {
            "VOCdevkit/VOC2007/ImageSets/Main/train.txt": b"000012\n",
            "VOCdevkit/VOC2007/Annotations/000012.xml": b"<annotation/>",
        },
    )
    md5_b = _tar(
        src / "VOCtest_06-Nov-2007.tar", {"VOCdevkit/VOC2007/ImageSets/Main/test.txt": b"000001\n"}
    )
    urls = [
        (src / "VOCtrainval_06-Nov-2007.tar").as_uri(),
        (src / "VOCtest_06-Nov-2007.tar").as_uri(),
    ]
    return urls, [md5_a, md5_b]


def test_fetch_verify_unpack_and_resume(tarballs, tmp_path: Path) -> None:
    urls, md5s = tarballs
    dest = tmp_path / "data"
    root = fetch_voc07(dest, urls=urls, md5s=md5s, progress=False)
    assert root == (dest / "VOCdevkit" / "VOC2007").resolve()
    assert (root / "ImageSets" / "Main" / "train.txt").read_text() == "000012\n"
    assert (root / "ImageSets" / "Main" / "test.txt").read_text() == "000001\n"
    assert (root / "Annotations" / "000012.xml").is_file()
    assert (dest / "VOCtrainval_06-Nov-2007.tar").is_file()
    # second call: verified and unpacked already -> no download (the server is gone)
    for u in urls:
        Path(u.removeprefix("file://")).unlink()
    assert fetch_voc07(dest, urls=urls, md5s=md5s, progress=False) == root
    # a verified tarball that was not unpacked yet is unpacked without downloading
    (dest / ".VOCtest_06-Nov-2007.tar.unpacked").unlink()
    (root / "ImageSets" / "Main" / "test.txt").unlink()
    fetch_voc07(dest, urls=urls, md5s=md5s, progress=False)
    assert (root / "ImageSets" / "Main" / "test.txt").is_file()


def test_md5_mismatch_removes_the_file(tarballs, tmp_path: Path) -> None:
    urls, md5s = tarballs
    dest = tmp_path / "data"
    with pytest.raises(DownloadError, match="md5 .* != expected 0+; the file was removed"):
        fetch_voc07(dest, urls=urls[:1], md5s=["0" * 32], progress=False)
    assert not (dest / "VOCtrainval_06-Nov-2007.tar").exists()
    assert not (dest / "VOCdevkit").exists()


def test_unreachable_url_and_cli(tmp_path: Path, capsys) -> None:
    missing = (tmp_path / "nope.tar").as_uri()
    with pytest.raises(DownloadError, match="download failed"):
        fetch_voc07(tmp_path / "d", urls=[missing], md5s=[None], progress=False)
    assert main(["--dest", str(tmp_path / "d"), "--urls", missing]) == 1
    assert "voc07: error:" in capsys.readouterr().err

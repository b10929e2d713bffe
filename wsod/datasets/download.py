"""Download, verify and unpack PASCAL VOC 2007 (``make voc07``).

``python -m wsod.datasets.download --dest data`` fetches the official trainval and test tarballs,
checks their md5 sums and unpacks them under ``<dest>/VOCdevkit/VOC2007``. It is resumable: a
tarball whose md5 is already verified is not downloaded again, an unpacked one (marker file
``<dest>/.<tar name>.unpacked``) is not unpacked again, and an interrupted http download resumes
from its ``.part`` file when the server supports ranges. Any URL urllib understands works
(tests use ``file://``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tarfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path

VOC07_URLS = (
    "http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtrainval_06-Nov-2007.tar",
    "http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtest_06-Nov-2007.tar",
)
VOC07_MD5S = ("c52e279531787c972589f7e41ab4ae64", "b6e924de25625d8de591ea690078ad9f")


class DownloadError(RuntimeError):
    """A download failed or its checksum does not match; the message says what to do."""


def md5sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _download(url: str, dest: Path, progress: bool = True) -> None:
    """Fetch ``url`` to ``dest`` through ``dest.part`` (resumed with an http Range request)."""
    from wsod.utils.progress import progress

    part = dest.with_name(dest.name + ".part")
    start = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url)
    if start and url.startswith(("http://", "https://")):
        req.add_header("Range", f"bytes={start}-")
    try:
        resp = urllib.request.urlopen(req, timeout=60)
    except (OSError, ValueError) as e:
        raise DownloadError(
            f"{url}: download failed ({e}); check the network and rerun "
            "(it resumes), or download it by hand into "
            f"{dest.parent}"
        ) from e
    with resp:
        resumed = start and getattr(resp, "status", None) == 206
        total = resp.headers.get("Content-Length")
        total = int(total) + (start if resumed else 0) if total else None
        with (
            open(part, "ab" if resumed else "wb") as f,
            progress(
                total=total,
                initial=start if resumed else 0,
                unit="B",
                unit_scale=True,
                desc=dest.name,
                disable=not progress,
            ) as bar,
        ):
            while block := resp.read(1 << 20):
                f.write(block)
                bar.update(len(block))
    os.replace(part, dest)


def _unpack(tar_path: Path, dest: Path) -> None:
    with tarfile.open(tar_path) as tf:
        tf.extractall(dest, filter="data")


def fetch_voc07(
    dest: str | os.PathLike,
    urls: Sequence[str] = VOC07_URLS,
    md5s: Sequence[str | None] = VOC07_MD5S,
    progress: bool = True,
) -> Path:
    """Download, verify and unpack the VOC 2007 tarballs under ``dest``.

    Args:
        dest: folder for the tarballs; they unpack to ``dest/VOCdevkit/VOC2007``.
        urls: tarball URLs (default: the official trainval and test tarballs).
        md5s: expected md5 per URL (None skips the check).
        progress: show a progress bar (a line every 10 % when not on a terminal) per download.

    Returns:
        ``dest/VOCdevkit/VOC2007``.

    Raises:
        DownloadError: a download failed or a checksum does not match (the bad file is removed).
    """
    dest = Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    if len(urls) != len(md5s):
        raise ValueError("give one md5 per URL")
    for url, md5 in zip(urls, md5s, strict=True):
        tar_path = dest / Path(urllib.request.url2pathname(url.rsplit("/", 1)[-1])).name
        marker = dest / f".{tar_path.name}.unpacked"
        if marker.is_file() and marker.read_text().strip() == (md5 or "unchecked"):
            print(f"{tar_path.name}: already unpacked, skipped", file=sys.stderr)
            continue
        if not (tar_path.is_file() and (md5 is None or md5sum(tar_path) == md5)):
            _download(url, tar_path, progress=progress)
            got = md5sum(tar_path)
            if md5 is not None and got != md5:
                tar_path.unlink()
                raise DownloadError(
                    f"{url}: md5 {got} != expected {md5}; the file was removed, "
                    "rerun to download it again"
                )
        tmp = dest / f".{tar_path.name}.unpacking"
        shutil.rmtree(tmp, ignore_errors=True)
        _unpack(tar_path, tmp)
        for top in tmp.iterdir():  # merge (trainval and test share VOCdevkit/VOC2007)
            for src in sorted(top.rglob("*")):
                if src.is_file():
                    out = dest / src.relative_to(tmp)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(src, out)
        shutil.rmtree(tmp, ignore_errors=True)
        marker.write_text(md5 or "unchecked")
    return dest / "VOCdevkit" / "VOC2007"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m wsod.datasets.download",
        description="Download PASCAL VOC 2007 (trainval + test), verify md5 sums and unpack them "
        "under DEST/VOCdevkit/VOC2007. Resumable.",
    )
    parser.add_argument("--dest", default="data", help="target folder (default: data)")
    parser.add_argument("--urls", nargs="+", help="override the tarball URLs (e.g. a mirror)")
    parser.add_argument("--md5s", nargs="+", help="md5 per URL (with --urls)")
    args = parser.parse_args(argv)
    urls = args.urls or VOC07_URLS
    md5s = args.md5s or (VOC07_MD5S if not args.urls else [None] * len(urls))
    try:
        root = fetch_voc07(args.dest, urls=urls, md5s=md5s)
    except (DownloadError, OSError, tarfile.TarError) as e:
        print(f"voc07: error: {e}", file=sys.stderr)
        return 1
    print(f"VOC 2007 ready at {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

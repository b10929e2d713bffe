"""Embedded demo dataset: a deterministic generator of a small synthetic detection dataset.

It writes a VOC layout (``JPEGImages/``, ``Annotations/*.xml``, ``ImageSets/Main/{train,val}.txt``
and the per-class lists ``<class>_<split>.txt``) so that it goes through the same loader as
PASCAL VOC (``wsod.datasets.voc``). Five classes of distinct shape *and* texture
(:data:`DEMO_CLASSES`):

- ``disc``: a disc with straight stripes at a random angle;
- ``square``: a checkered square (aspect 0.8-1.25);
- ``triangle``: a speckled triangle pointing up, down, left or right;
- ``ring``: a plain annulus (a hole in the middle shows the background);
- ``cross``: a plus sign with a plaid (grid-line) texture.

Each 320x240 image has 1-4 instances (random classes, overlap IoU < 0.2, sizes 30-160 px,
log-uniform) on a cluttered background (colour gradient, random lines, solid blobs, pixel
noise); colours are random per instance, so colour alone never tells the class. Boxes are the
tight bounds of each shape's mask (a later shape may cover a little of an earlier one) and go
only to the eval-only ``_gt`` file.

Determinism: every image draws from ``numpy.random.default_rng([seed, index])`` and is saved by
PIL as JPEG (quality 90), so the same seed and size give byte-identical files. A marker file
``wsod_demo.json`` (seed, sizes, generator version) lets a second call reuse the folder; a
different seed or size regenerates it. Default size: 400 train + 100 val images (a few seconds).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

DEMO_CLASSES = ("disc", "square", "triangle", "ring", "cross")
WIDTH, HEIGHT = 320, 240
MARKER = "wsod_demo.json"
GENERATOR_VERSION = 1
DEFAULT_SIZES = {"train": 400, "val": 100}
_OWNED = ("JPEGImages", "Annotations", "ImageSets")


def demo_sizes(num_images: int | Mapping | tuple | list | None) -> dict[str, int]:
    """``None`` -> 400/100; an int ``N`` -> ``N`` train and ``max(1, N // 4)`` val images;
    a ``{'train': n, 'val': m}`` mapping or a ``(n, m)`` pair as given."""
    if num_images is None:
        sizes = dict(DEFAULT_SIZES)
    elif isinstance(num_images, Mapping):
        sizes = {"train": int(num_images["train"]), "val": int(num_images["val"])}
    elif isinstance(num_images, (tuple, list)):
        sizes = {"train": int(num_images[0]), "val": int(num_images[1])}
    else:
        sizes = {"train": int(num_images), "val": max(1, int(num_images) // 4)}
    if min(sizes.values()) < 1:
        raise ValueError(f"demo sizes must be >= 1 image per split, got {sizes}")
    return sizes


# ----------------------------------------------------------------------------- drawing
def _color(rng: np.random.Generator, bright: bool = True) -> np.ndarray:
    c = rng.uniform(90, 255, 3) if bright else rng.uniform(40, 200, 3)
    return c.astype(np.float32)


def _two_colors(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    c1 = _color(rng)
    c2 = c1 * rng.uniform(0.15, 0.45)  # same hue, much darker: strong texture contrast
    if rng.random() < 0.5:
        c1, c2 = c2, c1
    return c1, c2


def _mask(shape: str, w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageDraw

    m = Image.new("L", (w, h), 0)
    d = ImageDraw.Draw(m)
    if shape == "disc":
        d.ellipse([0, 0, w - 1, h - 1], fill=255)
    elif shape == "square":
        d.rectangle([0, 0, w - 1, h - 1], fill=255)
    elif shape == "triangle":
        pts = {
            0: [(w / 2, 0), (w - 1, h - 1), (0, h - 1)],
            1: [(0, 0), (w - 1, 0), (w / 2, h - 1)],
            2: [(0, h / 2), (w - 1, 0), (w - 1, h - 1)],
            3: [(0, 0), (w - 1, h / 2), (0, h - 1)],
        }[int(rng.integers(4))]
        d.polygon(pts, fill=255)
    elif shape == "ring":
        d.ellipse([0, 0, w - 1, h - 1], fill=255)
        t = rng.uniform(0.22, 0.35)
        d.ellipse([w * t, h * t, w * (1 - t) - 1, h * (1 - t) - 1], fill=0)
    elif shape == "cross":
        a = rng.uniform(0.3, 0.4)
        d.rectangle([w * (0.5 - a / 2), 0, w * (0.5 + a / 2) - 1, h - 1], fill=255)
        d.rectangle([0, h * (0.5 - a / 2), w - 1, h * (0.5 + a / 2) - 1], fill=255)
    return np.asarray(m) > 127


def _texture(shape: str, w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    c1, c2 = _two_colors(rng)
    if shape == "disc":  # straight stripes
        ang = rng.uniform(0, np.pi)
        period = max(4.0, min(w, h) / rng.uniform(4, 7))
        sel = ((xx * np.cos(ang) + yy * np.sin(ang)) / period) % 2 < 1
    elif shape == "square":  # checkerboard
        p = max(3.0, min(w, h) / rng.uniform(4, 7))
        sel = ((xx // p + yy // p) % 2) == 0
    elif shape == "triangle":  # speckles
        sel = rng.random((h, w)) < 0.25
    elif shape == "ring":  # plain
        sel = np.ones((h, w), bool)
    else:  # cross: plaid grid lines
        p = max(4.0, min(w, h) / rng.uniform(5, 8))
        sel = ~(((xx % p) < p / 3) | ((yy % p) < p / 3))
    return np.where(sel[..., None], c1, c2)


def _background(rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageDraw

    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    a, b = _color(rng, bright=False), _color(rng, bright=False)
    t = (xx / WIDTH * rng.uniform(-1, 1) + yy / HEIGHT * rng.uniform(-1, 1)) % 1.0
    img = Image.fromarray((a + (b - a) * t[..., None]).astype(np.uint8))
    d = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(3, 9))):  # blobs
        cx, cy = rng.uniform(0, WIDTH), rng.uniform(0, HEIGHT)
        rx, ry = rng.uniform(8, 50), rng.uniform(8, 50)
        d.ellipse(
            [cx - rx, cy - ry, cx + rx, cy + ry],
            fill=tuple(int(v) for v in _color(rng, bright=False)),
        )
    for _ in range(int(rng.integers(5, 16))):  # lines
        pts = [
            float(v)
            for v in (
                rng.uniform(0, WIDTH),
                rng.uniform(0, HEIGHT),
                rng.uniform(0, WIDTH),
                rng.uniform(0, HEIGHT),
            )
        ]
        d.line(pts, fill=tuple(int(v) for v in _color(rng)), width=int(rng.integers(1, 4)))
    return np.asarray(img).astype(np.float32)


def _iou(a: list[int], b: list[int]) -> float:
    iw = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def render_image(seed: int, index: int) -> tuple[np.ndarray, list[dict]]:
    """Draw image number ``index`` of the dataset with ``seed``.

    Returns:
        ``(image, objects)``: uint8 (240, 320, 3) RGB and ``[{"name", "bbox": [x1, y1, x2, y2]}]``
        with integer 0-based continuous corners (tight bounds of the shape's mask).
    """
    rng = np.random.default_rng([int(seed), int(index)])
    img = _background(rng)
    objects: list[dict] = []
    for _ in range(int(rng.integers(1, 5))):
        name = DEMO_CLASSES[int(rng.integers(len(DEMO_CLASSES)))]
        for _try in range(30):
            s = float(np.exp(rng.uniform(np.log(30), np.log(160))))
            aspect = rng.uniform(0.8, 1.25) if name in ("square", "disc", "ring") else 1.0
            w = int(min(WIDTH - 2, max(12, round(s * np.sqrt(aspect)))))
            h = int(min(HEIGHT - 2, max(12, round(s / np.sqrt(aspect)))))
            x, y = int(rng.integers(0, WIDTH - w + 1)), int(rng.integers(0, HEIGHT - h + 1))
            box = [x, y, x + w, y + h]
            if all(_iou(box, o["bbox"]) < 0.2 for o in objects):
                break
        else:
            continue
        mask = _mask(name, w, h, rng)
        tex = _texture(name, w, h, rng)
        region = img[y : y + h, x : x + w]
        region[mask] = tex[mask]
        rows, cols = np.nonzero(mask.any(1))[0], np.nonzero(mask.any(0))[0]
        objects.append(
            {
                "name": name,
                "bbox": [
                    x + int(cols[0]),
                    y + int(rows[0]),
                    x + int(cols[-1]) + 1,
                    y + int(rows[-1]) + 1,
                ],
            }
        )
    img += rng.normal(0, 6, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).round().astype(np.uint8), objects


def _xml(stem: str, objects: list[dict]) -> str:
    objs = "".join(
        f"\t<object>\n\t\t<name>{o['name']}</name>\n\t\t<pose>Unspecified</pose>\n"
        f"\t\t<truncated>0</truncated>\n\t\t<difficult>0</difficult>\n\t\t<bndbox>\n"
        f"\t\t\t<xmin>{o['bbox'][0] + 1}</xmin>\n\t\t\t<ymin>{o['bbox'][1] + 1}</ymin>\n"
        f"\t\t\t<xmax>{o['bbox'][2]}</xmax>\n\t\t\t<ymax>{o['bbox'][3]}</ymax>\n"
        f"\t\t</bndbox>\n\t</object>\n"
        for o in objects
    )
    return (
        f"<annotation>\n\t<folder>wsod_demo</folder>\n\t<filename>{stem}.jpg</filename>\n"
        f"\t<size>\n\t\t<width>{WIDTH}</width>\n\t\t<height>{HEIGHT}</height>\n"
        f"\t\t<depth>3</depth>\n\t</size>\n\t<segmented>0</segmented>\n{objs}</annotation>\n"
    )


def _marker(seed: int, sizes: dict[str, int]) -> dict:
    return {
        "generator": "wsod.datasets.demo",
        "version": GENERATOR_VERSION,
        "seed": int(seed),
        "sizes": sizes,
        "classes": list(DEMO_CLASSES),
        "width": WIDTH,
        "height": HEIGHT,
    }


def _write_tree(root: Path, seed: int, sizes: dict[str, int]) -> None:
    from PIL import Image

    from wsod.utils.progress import progress

    for sub in ("JPEGImages", "Annotations", "ImageSets/Main"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    index = 0
    total = sum(sizes.values())
    bar = progress(total=total, desc="demo data", unit="img", disable=total < 1000)
    for split in ("train", "val"):
        stems, present = [], {c: [] for c in DEMO_CLASSES}
        for _ in range(sizes[split]):
            index += 1
            stem = f"{index:06d}"
            img, objects = render_image(seed, index)
            Image.fromarray(img).save(root / "JPEGImages" / f"{stem}.jpg", quality=90)
            (root / "Annotations" / f"{stem}.xml").write_text(_xml(stem, objects))
            names = {o["name"] for o in objects}
            stems.append(stem)
            for c in DEMO_CLASSES:
                present[c].append(f"{stem} {' 1' if c in names else '-1'}\n")
            bar.update()
        main = root / "ImageSets" / "Main"
        (main / f"{split}.txt").write_text("".join(f"{s}\n" for s in stems))
        for c in DEMO_CLASSES:
            (main / f"{c}_{split}.txt").write_text("".join(present[c]))
    bar.close()


def ensure_demo_dataset(
    root: str | os.PathLike, seed: int = 0, num_images: int | Mapping | tuple | list | None = None
) -> Path:
    """Generate the demo dataset in ``root`` unless it already holds the one for this seed/size.

    Args:
        root: target folder (created if needed). It must be empty, or hold a demo dataset made
            by this function (which is then reused or regenerated).
        seed: generator seed.
        num_images: sizes, see :func:`demo_sizes`.

    Returns:
        the absolute dataset root (a VOC-style folder).

    Raises:
        FileExistsError: ``root`` holds something that is not a demo dataset.
    """
    root = Path(root).resolve()
    sizes = demo_sizes(num_images)
    want = _marker(seed, sizes)
    marker = root / MARKER
    if marker.is_file():
        try:
            if json.loads(marker.read_text()) == want:
                return root
        except json.JSONDecodeError:
            pass
    elif root.is_dir() and any((root / d).exists() for d in _OWNED):
        raise FileExistsError(
            f"{root}: holds {', '.join(_OWNED)} but no {MARKER}, so it is not "
            "a generated demo dataset; choose an empty --source folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".generating-", dir=root))
    try:
        _write_tree(tmp, seed, sizes)
        marker.unlink(missing_ok=True)
        for d in _OWNED:
            if (root / d).exists():
                shutil.rmtree(root / d)
            os.replace(tmp / d, root / d)
        mtmp = root / f".{MARKER}.tmp"
        mtmp.write_text(json.dumps(want, indent=2))
        os.replace(mtmp, marker)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root

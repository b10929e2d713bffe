"""One size rule for the whole pipeline (the image as displayed, EXIF orientation applied), and
a bounded cost per image for phone-size photos: real VOC photos re-saved with an EXIF
orientation, or upscaled to 6000x4000, through the data and proposals stages."""

from __future__ import annotations

import json
import pickle
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import wsod.proposals.compute as compute
import wsod.proposals.selective_search as ss
from wsod import contracts
from wsod.contracts import ContractError
from wsod.datasets.base import DatasetError
from wsod.stages.data import run as data_run
from wsod.stages.proposals import RESIZE
from wsod.stages.proposals import run as proposals_run

ORIENTATION = 0x0112


def _save(src: Path, dst: Path, orientation: int | None = None, size=None) -> None:
    from PIL import Image

    with Image.open(src) as im:
        im = im.convert("RGB")
        if size is not None:
            im = im.resize(size, Image.BICUBIC)
        exif = Image.Exif()
        if orientation is not None:
            exif[ORIENTATION] = orientation
        im.save(dst, quality=92, exif=exif)


@pytest.fixture()
def rotated(voc_root: Path, tmp_path: Path) -> Path:
    """A folder with a real VOC photo (500x333 stored) tagged EXIF orientation 6 (shown turned a
    quarter clockwise: 333x500), a plain one, and a CSV of their tags."""
    root = tmp_path / "photos"
    root.mkdir()
    _save(voc_root / "JPEGImages" / "000012.jpg", root / "turned.jpg", orientation=6)
    shutil.copy(voc_root / "JPEGImages" / "000017.jpg", root / "plain.jpg")
    (root / "train.csv").write_text("turned.jpg,car\nplain.jpg,horse;person\n")
    return root


def test_exif_rotated_photo_is_recorded_and_proposed_as_displayed(rotated, tmp_path) -> None:
    """Before: the split recorded the stored 500x333 while every later stage read the photo
    turned (333x500), so proposals reached y=500 on an image recorded 333 high."""
    import cv2

    shown = cv2.imread(str(rotated / "turned.jpg"), cv2.IMREAD_COLOR).shape[:2]
    assert shown == (500, 333)  # OpenCV (as mmcv's loaders) applies the orientation
    data_run(rotated, tmp_path / "data", format="csv", splits=["train"])
    split = contracts.load_split(tmp_path / "data" / "train.json")
    sizes = {im["file_name"]: (im["width"], im["height"]) for im in split["images"]}
    assert sizes == {"turned.jpg": (333, 500), "plain.jpg": (480, 364)}
    assert split["info"]["image_sizes"] == contracts.IMAGE_SIZES == "displayed"
    gt = json.loads((tmp_path / "data" / "train_gt.json").read_text())
    assert {im["file_name"]: (im["width"], im["height"]) for im in gt["images"]} == sizes
    out = tmp_path / "p" / "train.pkl"
    proposals_run(tmp_path / "data" / "train.json", out, resize=250, max_boxes=300)
    boxes = contracts.validate_proposals(pickle.loads(out.read_bytes()))
    b = boxes["turned.jpg"]["bboxes"]
    assert b[:, 2].max() <= 333 and b[:, 3].max() <= 500
    assert b[:, 3].max() > 400  # the boxes span the displayed height, not the stored 333


def test_a_split_recorded_as_stored_is_refused(rotated, tmp_path) -> None:
    """The rule is checked: the contract refuses another ``image_sizes``; the proposals stage
    refuses a size that the pixels contradict (a split written before the rule), naming the
    image and the fix; a COCO json giving the stored size is refused by the data stage."""
    data_run(rotated, tmp_path / "data", format="csv", splits=["train"])
    path = tmp_path / "data" / "train.json"
    split = json.loads(path.read_text())
    split["info"]["image_sizes"] = "stored"
    with pytest.raises(ContractError, match=r"image_sizes is 'stored'.*wsod data"):
        contracts.validate_split(split, str(path))
    del split["info"]["image_sizes"]  # as written before the rule
    split["images"][0].update(width=500, height=333)
    path.write_text(json.dumps(split))
    with pytest.raises(RuntimeError, match=r"turned\.jpg.*records 500x333 but the image reads"):
        proposals_run(path, tmp_path / "p.pkl", resize=250)
    coco = {
        "images": [{"id": 1, "file_name": "turned.jpg", "width": 500, "height": 333}],
        "categories": [{"id": 1, "name": "car"}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 30, 40]}],
    }
    (rotated / "train.json").write_text(json.dumps(coco))
    with pytest.raises(DatasetError, match=r"gives 500x333 but the image is 333x500 as displayed"):
        data_run(rotated, tmp_path / "coco", format="coco", splits=["train"])


@pytest.fixture()
def phone(voc_root: Path, tmp_path: Path) -> Path:
    """A real VOC photo (000012, 500x333) upscaled to a 24 MP 6000x4000 JPEG, with its CSV."""
    root = tmp_path / "phone"
    root.mkdir()
    _save(voc_root / "JPEGImages" / "000012.jpg", root / "big.jpg", size=(6000, 4000))
    (root / "train.csv").write_text("big.jpg,car\n")
    return root


def test_phone_size_photo_runs_at_the_working_size(phone, tmp_path, monkeypatch) -> None:
    """Before: selective search ran on all 24 MP (tens of minutes). Now the image reaches it at
    the default working size (decoded at a reduced size first) and the boxes come back in the
    photo's full pixels; a new default is a new cache entry, never an old one."""
    data_run(phone, tmp_path / "data", format="csv", splits=["train"])
    seen = []
    real = ss.selective_search

    def spy(img, mode="fast", resize=None, seed=0):
        seen.append((img.shape[:2], resize))
        return real(img, mode, resize, seed)

    monkeypatch.setattr(ss, "selective_search", spy)
    out = tmp_path / "p" / "train.pkl"
    summary = proposals_run(tmp_path / "data" / "train.json", out, max_boxes=300)
    assert seen == [((500, 750), RESIZE)]  # decoded at an eighth (750 px), shrunk inside to 500
    b = contracts.validate_proposals(pickle.loads(out.read_bytes()))["big.jpg"]
    b = b["bboxes"]
    assert b.min() >= 0 and b[:, 2].max() <= 6000 and b[:, 3].max() <= 4000
    # selective search's last merge covers the whole image: back in full pixels on both axes
    whole = b[np.argmax((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))]
    np.testing.assert_allclose(whole, [0, 0, 6000, 4000], atol=13)
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["config"]["resize"] == RESIZE and summary["computed"] == 1
    # resize off (0) is its own cache entry: computed again (on a VOC-size copy: it is slow)
    monkeypatch.setattr(compute, "LARGE_SIDE", 100)
    seen.clear()
    data = json.loads((tmp_path / "data" / "train.json").read_text())
    _save(phone / "big.jpg", phone / "big.jpg", size=(300, 200))
    data["images"][0].update(width=300, height=200)
    (tmp_path / "data" / "train.json").write_text(json.dumps(data))
    with pytest.warns(UserWarning, match=r"1 images have a side over 100 px.*resize is off"):
        proposals_run(tmp_path / "data" / "train.json", out, resize=0, max_boxes=300)
    assert seen == [((200, 300), None)]


def test_voc_boxes_are_unchanged_by_the_working_size(voc_root, voc_train_ids, tmp_path) -> None:
    """VOC images are at most 500 px: the default working size leaves their proposals as at
    full resolution, box for box."""
    import cv2

    for i in voc_train_ids[:2]:
        path = voc_root / "JPEGImages" / f"{i}.jpg"
        h, w = cv2.imread(str(path)).shape[:2]
        assert max(h, w) <= RESIZE
        params = dict(method="selective_search", mode="fast", max_boxes=2000, min_size=8)
        params.update(seed=0, edge_model=None)
        full = compute.compute_image(path, f"JPEGImages/{i}.jpg", {**params, "resize": None})
        work = compute.compute_image(
            path, f"JPEGImages/{i}.jpg", {**params, "resize": RESIZE}, (w, h)
        )
        np.testing.assert_array_equal(full[0], work[0])
        np.testing.assert_array_equal(full[1], work[1])


def test_a_slow_image_is_named(voc_root, voc_train_ids, monkeypatch) -> None:
    """An image over the slow mark gets a warning naming it, its size and the setting."""
    monkeypatch.setattr(compute, "SLOW_IMAGE_SECONDS", 0.0)
    i = voc_train_ids[0]
    params = dict(method="selective_search", mode="fast", max_boxes=100, min_size=8)
    params.update(seed=0, edge_model=None, resize=200)
    task = (f"JPEGImages/{i}.jpg", str(voc_root / "JPEGImages" / f"{i}.jpg"), "d", (500, 333))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compute._note_time(task, 0.5, params)
    assert len(caught) == 1
    assert str(caught[0].message).startswith(
        f"JPEGImages/{i}.jpg: proposals took 0 s on this image (500x333, working size 200 px)"
    )

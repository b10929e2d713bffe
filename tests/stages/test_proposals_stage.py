"""The proposals stage end to end on a few real VOC images: contract + .npz twin, resume after
a partial loss, shards + merge == one run, 2 workers == 1 worker, imports, CLI, and loading
through mmdet's ``proposal_file`` + ``LoadProposals``."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import wsod.proposals.compute as compute
import wsod.stages.proposals as stage
from wsod.contracts import ContractError
from wsod.proposals.store import ProposalFileError, load_proposals

RESIZE = 200  # small copies keep selective search ~0.1 s per image


def _split(voc_root, ids, path):
    import cv2

    images = []
    for n, i in enumerate(ids):
        h, w = cv2.imread(str(voc_root / "JPEGImages" / f"{i}.jpg")).shape[:2]
        images.append(
            {
                "id": int(i),
                "file_name": f"JPEGImages/{i}.jpg",
                "width": w,
                "height": h,
                "labels": [1 + n % 2],
            }
        )
    split = {
        "images": images,
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "info": {"data_root": str(voc_root), "split": "train"},
    }
    path.write_text(json.dumps(split))
    return path


@pytest.fixture()
def split4(voc_root, voc_train_ids, tmp_path):
    return _split(voc_root, voc_train_ids[:4], tmp_path / "train.json")


def _same(a, b):
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k]["bboxes"], b[k]["bboxes"])
        np.testing.assert_array_equal(a[k]["scores"], b[k]["scores"])


def test_run_writes_contract_twin_and_meta(split4, tmp_path, voc_train_ids):
    out = tmp_path / "p" / "train.pkl"
    summary = stage.run(split4, out, resize=RESIZE, max_boxes=300)
    assert summary["computed"] == 4 and summary["cached"] == 0
    with open(out, "rb") as f:
        props = pickle.load(f)
    keys = [f"JPEGImages/{i}.jpg" for i in voc_train_ids[:4]]
    assert list(props) == keys  # split order, mmdet's key (last folder + file name)
    split = json.loads(split4.read_text())
    for im in split["images"]:
        p = props[im["file_name"]]
        assert p["bboxes"].dtype == np.float32 and p["scores"].dtype == np.float32
        assert 50 < len(p["bboxes"]) <= 300 and p["scores"].shape == (len(p["bboxes"]),)
        assert np.all(np.diff(p["scores"]) < 0)
        b = p["bboxes"]
        assert b.min() >= 0 and b[:, 2].max() <= im["width"] and b[:, 3].max() <= im["height"]
        assert np.all(b[:, 2:] - b[:, :2] >= 8)
    _same(load_proposals(out), props)  # the .npz twin, no pickle needed
    assert (tmp_path / "p" / "train.npz").is_file()
    meta = json.loads((tmp_path / "p" / "train.pkl.meta.json").read_text())
    assert meta["stage"] == "proposals" and meta["config"]["resize"] == RESIZE
    assert meta["shard"] is None and meta["boxes_per_image"] > 50
    # without its twin, the pickle needs the explicit opt-in
    (tmp_path / "p" / "train.npz").unlink()
    with pytest.raises(ProposalFileError, match=r"train\.pkl.*--allow-pickle"):
        load_proposals(out)
    with pytest.warns(UserWarning):
        _same(load_proposals(out, allow_pickle=True), props)


def test_resume_skips_cached_images_and_gives_identical_result(split4, tmp_path, monkeypatch):
    out = tmp_path / "train.pkl"
    first = stage.run(split4, out, resize=RESIZE)
    ref = load_proposals(out)
    # lose the output and half the per-image cache, as a run killed midway would
    out.unlink()
    cache_dir = tmp_path / "train.pkl.cache"
    cached = sorted(cache_dir.glob("*/*.npz"))
    assert len(cached) == 4 and first["cache_dir"] == str(cached[0].parent)
    for f in cached[:2]:
        f.unlink()
    calls = []
    real = compute.compute_image
    monkeypatch.setattr(
        compute,
        "compute_image",
        lambda path, key, params, size=None: calls.append(key) or real(path, key, params, size),
    )
    summary = stage.run(split4, out, resize=RESIZE)
    lost = {f.name.replace("__", "/").rsplit(".", 2)[0] for f in cached[:2]}  # name.digest.npz
    assert set(calls) == lost and len(calls) == 2
    assert summary["computed"] == 2 and summary["cached"] == 2
    _same(load_proposals(out), ref)
    # other parameters use another cache folder, never stale boxes
    calls.clear()
    stage.run(split4, tmp_path / "other.pkl", resize=RESIZE, cache_dir=cache_dir, max_boxes=50)
    assert len(calls) == 4


def test_one_cache_serves_runs_on_the_same_images_and_keys_by_content(split4, tmp_path, voc_root):
    """A cache shared between runs (the Makefile's PROPOSAL_CACHE) computes an image once per
    name and content: a copy of the images elsewhere is all cached; an image edited in place
    (same name, same size, other pixels) is computed again, never served stale boxes."""
    import shutil

    import cv2

    sp = json.loads(split4.read_text())
    roots = {}
    for name in ("a", "b", "c"):
        roots[name] = tmp_path / name
        for im in sp["images"]:
            dst = roots[name] / im["file_name"]
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(voc_root / im["file_name"], dst)
    edited = roots["c"] / sp["images"][1]["file_name"]
    cv2.imwrite(str(edited), cv2.imread(str(edited))[:, ::-1])  # mirrored: same size and name
    shared = tmp_path / "shared_cache"
    kw = dict(resize=RESIZE, cache_dir=shared)
    a = stage.run(split4, tmp_path / "a.pkl", data_root=roots["a"], **kw)
    b = stage.run(split4, tmp_path / "b.pkl", data_root=roots["b"], **kw)
    c = stage.run(split4, tmp_path / "c.pkl", data_root=roots["c"], **kw)
    assert (a["computed"], b["computed"], c["computed"]) == (4, 0, 1)
    _same(load_proposals(tmp_path / "b.pkl"), load_proposals(tmp_path / "a.pkl"))
    fresh = stage.run(split4, tmp_path / "c_fresh.pkl", data_root=roots["c"], resize=RESIZE)
    assert fresh["computed"] == 4
    _same(load_proposals(tmp_path / "c.pkl"), load_proposals(tmp_path / "c_fresh.pkl"))
    key = sp["images"][1]["file_name"]
    assert not np.array_equal(
        load_proposals(tmp_path / "c.pkl")[key]["bboxes"],
        load_proposals(tmp_path / "a.pkl")[key]["bboxes"],
    )


def test_shards_then_merge_equal_a_single_run_and_workers(split4, tmp_path, voc_root):
    single = tmp_path / "single.pkl"
    stage.run(split4, single, resize=RESIZE, max_boxes=500)
    shards = []
    for i in range(3):
        s = tmp_path / f"train.{i}of3.pkl"
        summ = stage.run(split4, s, resize=RESIZE, max_boxes=500, shard=f"{i}/3")
        assert summ["images"] == len(range(i, 4, 3))
        shards.append(s)
    meta = json.loads((tmp_path / "train.1of3.pkl.meta.json").read_text())
    assert meta["shard"]["index"] == 1 and meta["shard"]["count"] == 3
    merged = tmp_path / "merged.pkl"
    stage.run(split4, merged, merge=shards)
    _same(load_proposals(merged), load_proposals(single))
    with pytest.raises(ValueError, match="no shard file"):
        stage.run(split4, tmp_path / "bad.pkl", merge=shards[:2])
    # two processes give the same boxes as one
    two = tmp_path / "two.pkl"
    summ = stage.run(split4, two, resize=RESIZE, max_boxes=500, workers=2)
    assert summ["computed"] == 4
    _same(load_proposals(two), load_proposals(single))


def test_edge_boxes_method_and_import_roundtrip(split4, tmp_path):
    eb = tmp_path / "eb.pkl"
    s = stage.run(split4, eb, method="edge_boxes", resize=RESIZE, max_boxes=200)
    props = load_proposals(eb)
    assert s["computed"] == 4 and all(0 < len(v["bboxes"]) <= 200 for v in props.values())
    # import our own .npz (safe), then a pickle (needs the flag)
    imp = tmp_path / "imp.pkl"
    s = stage.run(split4, imp, method="import", import_file=tmp_path / "eb.npz", max_boxes=200)
    assert s["import_report"]["matched"] == 4
    _same(load_proposals(imp), props)
    with pytest.raises(ValueError, match=r"eb\.pkl.*--allow-pickle"):
        stage.run(split4, tmp_path / "x.pkl", method="import", import_file=eb)
    with pytest.raises(ValueError, match="--import-file"):
        stage.run(split4, tmp_path / "x.pkl", method="import")


def test_whole_image_method_gives_one_image_box_per_image(split4, tmp_path):
    out = tmp_path / "whole.pkl"
    s = stage.run(split4, out, method="whole_image")
    assert s["computed"] == 4 and s["boxes_per_image"] == 1.0
    props = load_proposals(out)
    sizes = {
        im["file_name"]: (im["width"], im["height"]) for im in json.load(open(split4))["images"]
    }
    assert list(props) == list(sizes)
    for k, v in props.items():
        np.testing.assert_array_equal(v["bboxes"], [[0, 0, *sizes[k]]])
        np.testing.assert_array_equal(v["scores"], [1.0])


def test_import_missing_images_is_an_error(split4, tmp_path):
    part = tmp_path / "part.npz"
    with open(part, "wb") as f:
        np.savez(
            f,
            keys=np.array(["JPEGImages/000012.jpg"]),
            offsets=np.array([0, 1]),
            bboxes=np.array([[0, 0, 20, 20]], np.float32),
            scores=np.ones(1, np.float32),
        )
    with pytest.raises(ValueError, match=r"part\.npz: 3 of 4 split images have no proposals"):
        stage.run(split4, tmp_path / "x.pkl", method="import", import_file=part)


def test_cli_reaches_run(split4, tmp_path, capsys, monkeypatch):
    import wsod.cli
    from wsod.cli import main

    monkeypatch.setattr(wsod.cli, "STAGES", ("proposals",))  # other stages may be absent here

    out = tmp_path / "cli.pkl"
    rc = main(
        [
            "proposals",
            "--split",
            str(split4),
            "--out",
            str(out),
            "--resize",
            "150",
            "--max-boxes",
            "100",
            "--shard",
            "0/2",
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["images"] == 2 and summary["shard"]["count"] == 2
    assert len(load_proposals(out)) == 2
    rc = main(
        ["proposals", "--split", str(split4), "--out", str(tmp_path / "y.pkl"), "--shard", "2/2"]
    )
    assert rc == 1 and "0 <= i < n" in capsys.readouterr().err
    with pytest.raises(ContractError):
        load_proposals(_bad_npz(tmp_path))


def _bad_npz(tmp_path):
    p = tmp_path / "bad.npz"
    with open(p, "wb") as f:  # x2 < x1 breaks the contract
        np.savez(
            f,
            keys=np.array(["a.jpg"]),
            offsets=np.array([0, 1]),
            bboxes=np.array([[10, 0, 5, 5]], np.float32),
            scores=np.ones(1, np.float32),
        )
    return p


def test_output_loads_in_mmdet_through_proposal_file(split4, tmp_path, voc_root):
    """mmdet's own dataset + LoadProposals read our .pkl for real VOC images."""
    from mmdet.datasets import CocoDataset
    from mmdet.datasets.transforms import LoadProposals

    out = tmp_path / "train.pkl"
    stage.run(split4, out, resize=RESIZE, max_boxes=400)
    split = json.loads(split4.read_text())
    ann = tmp_path / "coco.json"  # images only: no boxes are needed to load proposals
    ann.write_text(
        json.dumps(
            {
                "images": [
                    {k: im[k] for k in ("id", "file_name", "width", "height")}
                    for im in split["images"]
                ],
                "annotations": [],
                "categories": split["categories"],
            }
        )
    )
    ds = CocoDataset(
        data_root=str(voc_root),
        ann_file=str(ann),
        data_prefix=dict(img=""),
        proposal_file=str(out),
        metainfo=dict(classes=("a", "b")),
        filter_cfg=dict(filter_empty_gt=False),
        test_mode=False,
        pipeline=[LoadProposals(num_max_proposals=100)],
    )
    assert len(ds) == 4
    ours = load_proposals(out)
    for i in range(4):
        info = ds.get_data_info(i)
        key = "/".join(info["img_path"].split("/")[-2:])
        np.testing.assert_array_equal(info["proposals"]["bboxes"], ours[key]["bboxes"])
        res = LoadProposals(num_max_proposals=100)(dict(proposals=info["proposals"]))
        assert res["proposals"].shape == (100, 4)
        np.testing.assert_array_equal(res["proposals"], ours[key]["bboxes"][:100])
        item = ds[i]  # through the dataset's own pipeline
        np.testing.assert_array_equal(item["proposals"], ours[key]["bboxes"][:100])

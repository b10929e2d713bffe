"""The .pkl / .npz twin pair: a replaced .pkl makes its twin stale (refused, with the fix);
every pickle load needs the user's opt-in, the mmdet dataset's included."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil

import numpy as np
import pytest

from wsod.proposals.store import (
    ProposalFileError,
    load_proposals,
    npz_twin,
    pack,
    pickle_bytes,
    save_proposals,
)


@pytest.fixture()
def split3(voc_root, voc_train_ids, tmp_path):
    """A 3-image split of real VOC train images (sizes from the image headers)."""
    from PIL import Image

    images = []
    for i in voc_train_ids[:3]:
        with Image.open(voc_root / "JPEGImages" / f"{i}.jpg") as im:
            w, h = im.size
        images.append(
            {
                "id": int(i),
                "file_name": f"JPEGImages/{i}.jpg",
                "width": w,
                "height": h,
                "labels": [1],
            }
        )
    split = {
        "images": images,
        "categories": [{"id": 1, "name": "a"}],
        "info": {"data_root": str(voc_root), "split": "train"},
    }
    path = tmp_path / "train.json"
    path.write_text(json.dumps(split))
    return path


def _props(split_path, shift=0.0):
    from wsod.proposals.compute import whole_image

    props = whole_image(json.loads(split_path.read_text())["images"])
    for v in props.values():
        v["bboxes"] = v["bboxes"] * 0.5 + shift
    return props


def _same(a, b):
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k]["bboxes"], b[k]["bboxes"])


def test_twin_records_the_pickle_hash(split3, tmp_path):
    out = tmp_path / "p" / "train.pkl"
    save_proposals(out, _props(split3), stage="test")
    with np.load(npz_twin(out)) as z:
        assert str(z["pkl_sha256"]) == hashlib.sha256(out.read_bytes()).hexdigest()
    with open(out, "rb") as f:
        _same(pickle.load(f), _props(split3))
    _same(load_proposals(out), _props(split3))  # twin read, no opt-in needed


def test_a_replaced_pickle_makes_its_twin_stale(split3, tmp_path):
    out = tmp_path / "train.pkl"
    save_proposals(out, _props(split3), stage="test")
    other = tmp_path / "other" / "train.pkl"
    save_proposals(other, _props(split3, shift=3.0), stage="test")
    shutil.copy(other, out)  # the user replaces the .pkl; the old .npz stays beside it
    for allow in (False, True):
        with pytest.raises(ProposalFileError, match=r"train\.npz: stale twin of .*train\.pkl") as e:
            load_proposals(out, allow_pickle=allow)
        assert "Delete" in str(e.value) and "rerun `wsod proposals`" in str(e.value)
    npz_twin(out).unlink()  # the fix the message gives
    with pytest.warns(UserWarning, match="unpickling"):
        _same(load_proposals(out, allow_pickle=True), _props(split3, shift=3.0))


def test_a_twin_without_the_hash_is_checked_by_content(split3, tmp_path):
    """Twins written before the hash was recorded: accepted while the .pkl holds the same."""
    props = _props(split3)
    out = tmp_path / "train.pkl"
    clean = {k: {"bboxes": v["bboxes"], "scores": v["scores"]} for k, v in props.items()}
    with open(out, "wb") as f:
        pickle.dump(clean, f, protocol=4)  # as the earlier writer did
    with open(npz_twin(out), "wb") as f:
        np.savez(f, **pack(clean))
    assert pickle_bytes(clean) == out.read_bytes()
    _same(load_proposals(out), props)
    out.write_bytes(pickle_bytes(_props(split3, shift=1.0)))
    with pytest.raises(ProposalFileError, match="stale twin"):
        load_proposals(out)


def test_weak_dataset_unpickles_only_with_the_opt_in(split3, tmp_path):
    """``--train-proposals file.pkl`` without a twin: refused unless allow_pickle (the weak
    stage sets it from --allow-pickle); a payload never runs without it."""
    from wsod.datasets.weak_dataset import WSODWeakDataset

    marker = tmp_path / "payload_ran"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(_Payload(str(marker))))
    kw = dict(ann_file=str(split3), data_prefix={"img": ""}, pipeline=[], test_mode=True)
    with pytest.raises(ProposalFileError, match=r"evil\.pkl.*--allow-pickle"):
        WSODWeakDataset(proposal_file=str(evil), **kw)
    assert not marker.exists()

    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle_bytes(_props(split3)))  # a user's .pkl, no twin
    with pytest.raises(ProposalFileError, match="--allow-pickle"):
        WSODWeakDataset(proposal_file=str(plain), **kw)
    with pytest.warns(UserWarning, match="unpickling"):
        ds = WSODWeakDataset(proposal_file=str(plain), allow_pickle=True, **kw)
    assert len(ds) == 3
    np.testing.assert_array_equal(
        ds.get_data_info(0)["proposals"]["bboxes"], next(iter(_props(split3).values()))["bboxes"]
    )


def test_weak_stage_passes_allow_pickle_to_the_dataset(split3, tmp_path):
    from mmengine.config import ConfigDict

    from wsod.stages import weak
    from wsod.training.split_dataset import set_split_dataset

    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle_bytes(_props(split3)))
    split = json.loads(split3.read_text())
    ds = ConfigDict(type="WSODWeakDataset")
    # without --allow-pickle a pickle without its .npz twin is refused before anything is wired
    with pytest.raises(weak.WeakStageError, match="without its .npz twin.*--allow-pickle"):
        set_split_dataset(ds, split3, split, plain, error=weak.WeakStageError)
    assert not ds.get("allow_pickle")
    set_split_dataset(ds, split3, split, plain, allow_pickle=True, error=weak.WeakStageError)
    assert ds.allow_pickle is True


class _Payload:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_require_proposal_file_reads_the_twin_the_loader_reads(tmp_path):
    """A proposal file of any suffix counts as present when the loader's twin exists (one rule:
    ``npz_twin``), and is refused with the command that makes it when neither exists."""
    from wsod.proposals.store import require_proposal_file

    props = tmp_path / "train.props"
    with pytest.raises(ProposalFileError, match="wsod proposals"):
        require_proposal_file(props, "train.json")
    npz_twin(props).write_bytes(b"")  # train.props.npz, what load_proposals reads first
    require_proposal_file(props, "train.json")
    (tmp_path / "other.npz").write_bytes(b"")  # a same-stem .npz is not other.props's twin
    with pytest.raises(ProposalFileError, match="other.props"):
        require_proposal_file(tmp_path / "other.props", "train.json")

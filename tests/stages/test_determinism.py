"""Same seed, same result: the weak and the strong stage trained twice on real VOC images.

With one intra-op thread two runs of the same seed give bit-identical weights and detections;
with two threads (another reduction order in the float sums) they agree within float
tolerance; another seed gives other weights, which shows that the comparison can see a
difference. Tiny runs (3 images, 2 iterations) of the stages' real configs, through their
``run()`` functions (the code path ``make`` calls).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_strong_stage import DEMO_CONFIG, voc3  # noqa: F401 (fixture)
from test_strong_stage import FAST as STRONG_FAST
from test_weak_stage import CONFIG as WEAK_CONFIG
from test_weak_stage import FAST as WEAK_FAST
from test_weak_stage import voc_inputs  # noqa: F401 (fixture)

from wsod.utils.io import read_json

# two threads change the order of float sums: what two trainings of 2 steps may differ by
ATOL, RTOL = 1e-4, 1e-3


def _threads(n: int):
    class _Threads:
        def __enter__(self):
            self.before = torch.get_num_threads()
            torch.set_num_threads(n)

        def __exit__(self, *exc):
            torch.set_num_threads(self.before)

    return _Threads()


def _weights(checkpoint: str) -> dict[str, torch.Tensor]:
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)["state_dict"]
    return {k: v for k, v in state.items() if v.is_floating_point()}


def _diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) if a[k].numel() else 0.0 for k in a)


def _dets(path: Path) -> tuple[list, np.ndarray]:
    """Detections sorted by (image, class, box): their keys and their boxes + scores."""
    rows = sorted(read_json(path), key=lambda d: (d["image_id"], d["category_id"], d["bbox"]))
    keys = [(d["image_id"], d["category_id"]) for d in rows]
    return keys, np.array([[*d["bbox"], d["score"]] for d in rows], np.float64)


def _same_detections(a: Path, b: Path, exact: bool) -> None:
    ka, va = _dets(a)
    kb, vb = _dets(b)
    assert len(ka) > 0
    if exact:
        assert read_json(a) == read_json(b)
    else:
        # the same boxes, within tolerance (a box's order among near-equal ones may swap)
        assert len(ka) == len(kb)
        np.testing.assert_allclose(np.sort(va, 0), np.sort(vb, 0), atol=0.05, rtol=RTOL)


def _same_seed_same_run(train) -> None:
    """``train(name, threads, seed=0) -> (weights, detections json)``: one thread and the same
    seed twice give bit-identical weights and detections; two threads the same within
    tolerance; another seed other weights."""
    a, a_dets = train("a", 1)
    b, b_dets = train("b", 1)
    assert _diff(a, b) == 0.0, "one thread, same seed: bit-identical weights"
    _same_detections(a_dets, b_dets, exact=True)
    c, c_dets = train("c", 2)
    assert _diff(a, c) <= ATOL
    _same_detections(a_dets, c_dets, exact=False)
    other, _ = train("seed1", 1, seed=1)
    assert _diff(a, other) > 100 * ATOL, "another seed must train other weights"


@pytest.mark.slow
def test_weak_stage_same_seed_same_weights_and_detections(voc_inputs, tmp_path):  # noqa: F811
    from wsod.stages.weak import run

    split, pkl, _ = voc_inputs

    def train(name: str, threads: int, seed: int = 0) -> tuple[dict, Path]:
        out = tmp_path / f"{name}.json"
        with _threads(threads):
            res = run(
                WEAK_CONFIG,
                tmp_path / name,
                train_split=split,
                train_proposals=pkl,
                infer=[(split, pkl, out)],
                cfg_options={**WEAK_FAST, "model.roi_head.test_cfg.score_thr": 0.0},
                max_iters=2,
                seed=seed,
            )
        assert res["iterations"] == 2 and res["resumed_from"] is None
        return _weights(res["checkpoint"]), out

    _same_seed_same_run(train)


@pytest.mark.slow
def test_strong_stage_same_seed_same_weights_and_detections(voc3, tmp_path):  # noqa: F811
    from wsod.stages.strong import run

    def train(name: str, threads: int, seed: int = 0) -> tuple[dict, Path]:
        out = tmp_path / f"{name}.json"
        with _threads(threads):
            res = run(
                DEMO_CONFIG,
                voc3["pseudo"],
                tmp_path / name,
                cfg_options=STRONG_FAST,
                max_iters=2,
                seed=seed,
                infer=[(voc3["split"], out)],
            )
        assert res["iterations"] == 2 and res["resumed_from"] is None
        return _weights(res["checkpoint"]), out

    _same_seed_same_run(train)


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["weak", "strong"])
def test_resumed_training_ends_where_an_uninterrupted_one_ends(
    stage,
    voc_inputs,  # noqa: F811
    voc3,  # noqa: F811
    tmp_path,
):
    """3 steps straight vs 3 steps cut after step 2 (the last checkpoint deleted, as a kill
    leaves the work dir) and resumed: the same weights, bit for bit (one thread). Step 3 draws
    random numbers (dropout, RoI sampling) from where step 2 left the generator."""
    from wsod.stages import strong, weak

    def train(work: Path) -> dict:
        with _threads(1):
            if stage == "weak":
                split, pkl, _ = voc_inputs
                opts = {**WEAK_FAST, "default_hooks.checkpoint.interval": 1}
                return weak.run(WEAK_CONFIG, work, train_split=split, train_proposals=pkl,
                                infer=[], cfg_options=opts, max_iters=3)  # fmt: skip
            return strong.run(DEMO_CONFIG, voc3["pseudo"], work, cfg_options=STRONG_FAST,
                              max_iters=3)  # fmt: skip

    straight = train(tmp_path / "straight")
    cut = tmp_path / "cut"
    train(cut)
    (cut / "iter_3.pth").unlink()
    (cut / "last_checkpoint").write_text(str(cut / "iter_2.pth"))
    resumed = train(cut)
    assert resumed["resumed_from"], "the run restarted instead of resuming from iter_2.pth"
    assert Path(resumed["resumed_from"]).name == "iter_2.pth" and resumed["iterations"] == 3
    assert _diff(_weights(straight["checkpoint"]), _weights(resumed["checkpoint"])) == 0.0

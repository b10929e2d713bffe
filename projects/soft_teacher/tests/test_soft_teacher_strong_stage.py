"""The strong stage with the semi-supervised config (projects/soft_teacher/configs/) on 4 real VOC train
images: the labelled / unlabelled split it writes, one training iteration through
``wsod strong`` in which the teacher's pseudo boxes keep only the image's classes, resume and
the fingerprint, and the errors that name the fix.

The pseudo labels are the real boxes of two of the images (read by the test through the data
stage's eval-only file: tests may read ground truth, the stage never does); the other two have
no box, so they are the unlabelled images.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from wsod import contracts
from wsod.stages import data as data_stage
from wsod.utils.io import read_json, write_json

PROJECT = Path(__file__).resolve().parents[1]
SEMI_CONFIG = (
    PROJECT
    / "configs/soft-teacher_faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)
UNSUP = "train_dataloader.dataset.datasets.1.pipeline.2"
# tiny and quick: no ImageNet init, no loader processes, inputs of about 224 px, a checkpoint
# every iteration; the teacher keeps every box (score thresholds 0), so that its restriction
# to the image labels has boxes of other classes to remove
FAST = {
    "model.detector.backbone.init_cfg": None,
    "train_dataloader.num_workers": 0,
    "train_dataloader.persistent_workers": False,
    "test_dataloader.num_workers": 0,
    "test_dataloader.persistent_workers": False,
    "train_dataloader.dataset.datasets.0.pipeline.2.scale": (224, 224),
    f"{UNSUP}.unsup_teacher.0.scale": (224, 224),
    f"{UNSUP}.unsup_student.0.scale": [(192, 192), (256, 256)],
    "test_dataloader.dataset.pipeline.1.scale": (224, 224),
    "default_hooks.checkpoint.interval": 1,
    "default_hooks.logger.interval": 1,
    "model.detector.test_cfg.rcnn.score_thr": 0.0,
    "model.semi_train_cfg.pseudo_label_initial_score_thr": 0.0,
    "model.semi_train_cfg.cls_pseudo_thr": 0.0,
    "custom_hooks.1.burn_in_iters": 0,  # the unlabelled branch from the first iteration
}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op thread (a loaded 2-core machine; see test_strong_stage.py)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def voc4(voc_root, tmp_path_factory):
    """train.json (4 real VOC train images) and pseudo labels on the first two of them."""
    out = tmp_path_factory.mktemp("semi_data")
    data_stage.run(voc_root, out, format="voc", splits=["train"], limit=4)
    real = read_json(out / "train_gt.json")
    boxed = [im["id"] for im in real["images"][:2]]
    pseudo = {
        "info": {"data_root": str(voc_root), "split_file": str(out / "train.json")},
        "images": real["images"],
        "categories": real["categories"],
        "annotations": [
            {**{k: a[k] for k in ("id", "image_id", "category_id", "bbox")}, "score": 0.9}
            for a in real["annotations"]
            if a["image_id"] in boxed
        ],
    }
    write_json(out / "pseudo_train.json", pseudo)
    return {"split": out / "train.json", "pseudo": out / "pseudo_train.json", "boxed": boxed}


def _cfg_options(options: dict) -> list[str]:
    return [f"{k}={v!r}".replace(" ", "") for k, v in options.items()]


@pytest.mark.slow
def test_one_iteration_through_wsod_strong(voc4, tmp_path, monkeypatch):
    from projects.soft_teacher import soft_teacher as semi
    from wsod.cli import main

    seen = []
    restrict = semi.label_restricted_teacher.restrict_to_image_labels

    def spy(instances, image_labels):
        kept = restrict(instances, image_labels)
        seen.append((instances.labels.tolist(), kept.labels.tolist(), list(image_labels)))
        return kept

    monkeypatch.setattr(semi.label_restricted_teacher, "restrict_to_image_labels", spy)
    work = tmp_path / "strong"
    argv = ["strong", "--config", str(SEMI_CONFIG), "--pseudo-labels", str(voc4["pseudo"])]
    argv += ["--work-dir", str(work), "--max-iters", "1", "--infer", str(voc4["split"])]
    assert main([*argv, "--cfg-options", *_cfg_options(FAST)]) == 0

    # the unlabelled images: the two without a pseudo box, with their image-level labels
    split = contracts.load_split(voc4["split"])
    unlabelled = contracts.load_split(work / "unlabeled_images.json")
    rest = [im for im in split["images"] if im["id"] not in voc4["boxed"]]
    assert [im["id"] for im in unlabelled["images"]] == [im["id"] for im in rest]
    assert [im["labels"] for im in unlabelled["images"]] == [sorted(im["labels"]) for im in rest]
    assert "annotations" not in unlabelled

    # one iteration = one unlabelled image: the teacher proposed boxes of other classes too,
    # and only the image's classes (label i = category i + 1) reached the student
    (before, kept, allowed), *_ = seen
    labels_of = {im["id"]: [c - 1 for c in im["labels"]] for im in rest}
    assert sorted(allowed) in [sorted(v) for v in labels_of.values()]
    assert set(before) - set(allowed), "the untrained teacher boxes only the allowed classes?"
    assert kept and set(kept) <= set(allowed)
    assert kept == [c for c in before if c in allowed]

    run_record = read_json(work / "strong_run.json")
    assert run_record["unlabeled_images"] == 2 and run_record["unlabeled_sha256"]
    dets = contracts.load_detections(work / "train_dets.json", split)
    assert {d["image_id"] for d in dets} == {im["id"] for im in split["images"]}
    assert read_json(work / "strong_model.json")["iterations"] == 1

    # the work dir's detector (the mean teacher) also detects on new images (wsod predict)
    from wsod.stages import predict

    image = Path(split["info"]["data_root"]) / split["images"][0]["file_name"]
    predicted = predict.run([image], tmp_path / "predict", strong_dir=work, device="cpu")
    assert read_json(tmp_path / "predict" / "detections.json"), predicted


@pytest.mark.slow
def test_burn_in_skips_the_teacher_then_copies_the_student(voc4, tmp_path, monkeypatch):
    from projects.soft_teacher import soft_teacher as semi
    from wsod.stages.strong import run

    calls = []
    pseudo = semi.WSODLabelRestrictedSoftTeacher.get_pseudo_instances

    def spy(self, inputs, samples):
        # the teacher equals the student at the first semi-supervised iteration
        same = all(
            torch.equal(a, b)
            for a, b in zip(
                self.teacher.state_dict().values(), self.student.state_dict().values(), strict=True
            )
        )
        calls.append((float(self.semi_train_cfg.unsup_weight), same))
        return pseudo(self, inputs, samples)

    monkeypatch.setattr(semi.WSODLabelRestrictedSoftTeacher, "get_pseudo_instances", spy)
    opts = {**FAST, "custom_hooks.1.burn_in_iters": 2}
    run(SEMI_CONFIG, voc4["pseudo"], tmp_path / "strong", cfg_options=opts, max_iters=3)
    # iterations 1-2: labelled images only (no teacher pass); iteration 3: the teacher, a copy
    # of the student trained two iterations, mines boxes at the config's unsup_weight
    assert calls == [(1.0, True)]
    log = next((tmp_path / "strong").glob("*/*.log")).read_text()
    assert "burn-in over at iteration 2" in log


@pytest.mark.slow
def test_resume_fingerprint_and_all_images_unlabelled(voc4, tmp_path):
    from wsod.stages.strong import run

    work = tmp_path / "strong"
    first = run(SEMI_CONFIG, voc4["pseudo"], work, cfg_options=FAST, max_iters=1)
    assert first["extra_inputs"] == str(work / "unlabeled_images.json")
    again = run(SEMI_CONFIG, voc4["pseudo"], work, cfg_options=FAST, max_iters=1)
    assert again["resumed_from"].endswith("iter_1.pth")  # the same run: nothing retrained
    # the student detects instead of the teacher: an inference setting, nothing retrained
    student = {**FAST, "model.semi_test_cfg.predict_on": "student"}
    other = run(SEMI_CONFIG, voc4["pseudo"], work, cfg_options=student, max_iters=1)
    assert other["resumed_from"].endswith("iter_1.pth") and not (work / "stale").exists()
    # every image unlabelled: other unlabelled images, another run (not resumed)
    every = run(
        SEMI_CONFIG,
        voc4["pseudo"],
        work,
        cfg_options={**FAST, "strong_inputs.which": "all"},
        max_iters=1,
        train_split=voc4["split"],
    )
    assert every["resumed_from"] is None and (work / "stale").is_dir()
    assert len(read_json(work / "unlabeled_images.json")["images"]) == 4


def test_errors_name_the_fix(voc4, tmp_path):
    from wsod.stages.strong import StrongStageError, run

    no_split = read_json(voc4["pseudo"])
    del no_split["info"]["split_file"]
    write_json(tmp_path / "no_split.json", no_split)
    with pytest.raises(StrongStageError, match="--train-split"):
        run(SEMI_CONFIG, tmp_path / "no_split.json", tmp_path / "a", cfg_options=FAST)

    all_boxed = read_json(voc4["pseudo"])
    first = all_boxed["annotations"][0]
    all_boxed["annotations"] += [
        {**first, "id": 1000 + i, "image_id": im["id"]} for i, im in enumerate(all_boxed["images"])
    ]
    write_json(tmp_path / "all_boxed.json", all_boxed)
    with pytest.raises(StrongStageError, match="strong_inputs.which=all"):
        run(SEMI_CONFIG, tmp_path / "all_boxed.json", tmp_path / "b", cfg_options=FAST)

    with pytest.raises(StrongStageError, match="rest"):
        opts = {**FAST, "strong_inputs.which": "some"}
        run(SEMI_CONFIG, voc4["pseudo"], tmp_path / "c", cfg_options=opts)

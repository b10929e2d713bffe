"""Resume only the same run: run fingerprints and moving another run's checkpoints aside."""

from __future__ import annotations

import json

from mmengine.config import Config

from wsod import training as rn


def make_cfg(**over):
    cfg = Config(
        dict(
            model=dict(type="M", depth=2),
            train_cfg=dict(type="IterBasedTrainLoop", max_iters=10),
            test_dataloader=dict(batch_size=1),
            work_dir="a",
            randomness=dict(seed=0),
        )
    )
    cfg.merge_from_dict(over)
    return cfg


def test_fingerprint_follows_what_training_computes(tmp_path):
    data = tmp_path / "train.json"
    data.write_text("[1]")
    base = rn.run_fingerprint(make_cfg(), [data])
    assert rn.run_fingerprint(make_cfg(), [data]) == base
    # runtime and test-loop keys do not matter
    assert rn.run_fingerprint(make_cfg(work_dir="b", experiment_name="x"), [data]) == base
    assert rn.run_fingerprint(make_cfg(**{"test_dataloader.batch_size": 4}), [data]) == base
    # the model, schedule, seed and input contents do
    assert rn.run_fingerprint(make_cfg(**{"model.depth": 3}), [data]) != base
    assert rn.run_fingerprint(make_cfg(**{"train_cfg.max_iters": 20}), [data]) != base
    assert rn.run_fingerprint(make_cfg(**{"randomness.seed": 1}), [data]) != base
    data.write_text("[2]")
    assert rn.run_fingerprint(make_cfg(), [data]) != base


def test_fingerprint_leaves_out_the_models_inference_settings(tmp_path):
    data = tmp_path / "train.json"
    data.write_text("[1]")
    cfg = make_cfg(**{"model.roi_head": dict(type="H", test_cfg=dict(nms=0.3))})
    base = rn.run_fingerprint(cfg, [data])
    assert base.startswith("v5:")
    for change in (
        {"model.roi_head.test_cfg.nms": 0.5},
        {"model.test_cfg": dict(flip=True, scales=[0.75, 1.0])},
    ):
        changed = make_cfg(**{"model.roi_head": dict(type="H", test_cfg=dict(nms=0.3))}, **change)
        assert rn.run_fingerprint(changed, [data]) == base, change
        # version 1 (run files of older versions) counted them
        assert rn.run_fingerprint(changed, [data], version=1) != rn.run_fingerprint(
            cfg, [data], version=1
        )
    assert rn.run_fingerprint(make_cfg(**{"model.roi_head.type": "G"}), [data]) != base


def test_fingerprint_leaves_out_which_semi_supervised_model_detects(tmp_path):
    """A soft teacher's ``semi_test_cfg`` (teacher or student detects) does not retrain it; a
    run file of version 3, which counted it, still resumes (its fingerprint is a legacy one)."""
    data = tmp_path / "train.json"
    data.write_text("[1]")
    semi = dict(type="S", semi_train_cfg=dict(unsup_weight=1.0))
    cfg = make_cfg(**{"model": dict(semi, semi_test_cfg=dict(predict_on="teacher"))})
    student = make_cfg(**{"model": dict(semi, semi_test_cfg=dict(predict_on="student"))})
    assert rn.run_fingerprint(student, [data]) == rn.run_fingerprint(cfg, [data])
    assert rn.run_fingerprint(student, [data], version=3) != rn.run_fingerprint(
        cfg, [data], version=3
    )
    assert rn.run_fingerprint(
        make_cfg(**{"model": dict(semi, semi_train_cfg=dict(unsup_weight=2.0))}), [data]
    ) != rn.run_fingerprint(make_cfg(**{"model": semi}), [data])


def test_fingerprint_does_not_depend_on_where_the_run_folder_lies(tmp_path):
    """Version 5: a path inside the work dir, or of a hashed input file, is a placeholder, so a
    run folder moved elsewhere is the same run; any other path, and the inputs' contents, still
    count. Version 4 (older run files) kept the paths."""

    def run_in(folder, **over):
        data = folder / "data" / "train.json"
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text("[1]")
        work = folder / "strong"
        cfg = make_cfg(
            work_dir=str(work),
            train_dataloader=dict(
                dataset=dict(ann_file=str(data), extra=str(work / "train_annotations.json"))
            ),
            **over,
        )
        return cfg, data

    here, there = tmp_path / "run", tmp_path / "moved" / "run"
    (cfg, data), (moved, moved_data) = run_in(here), run_in(there)
    assert rn.run_fingerprint(moved, [moved_data]) == rn.run_fingerprint(cfg, [data])
    assert rn.run_fingerprint(moved, [moved_data], version=4) != rn.run_fingerprint(
        cfg, [data], version=4
    )
    # an input hashed by the caller (hashed_elsewhere) is a placeholder too
    assert rn.run_fingerprint(moved, [], hashed_elsewhere=[moved_data]) == rn.run_fingerprint(
        cfg, [], hashed_elsewhere=[data]
    )
    # ... but not when nobody hashes it: its path then tells the runs apart
    assert rn.run_fingerprint(moved, []) != rn.run_fingerprint(cfg, [])
    # another path (here the image folder) and other input contents are another run
    other_root, _ = run_in(there, data_root="/elsewhere/VOC2007")
    assert rn.run_fingerprint(other_root, [moved_data]) != rn.run_fingerprint(moved, [moved_data])
    moved_data.write_text("[2]")
    assert rn.run_fingerprint(moved, [moved_data]) != rn.run_fingerprint(cfg, [data])
    # a path that only starts like the work dir is not inside it
    near = make_cfg(work_dir=str(here / "strong"), data_root=str(here / "strong2"))
    far = make_cfg(work_dir=str(there / "strong"), data_root=str(there / "strong2"))
    assert rn.run_fingerprint(near, [data]) != rn.run_fingerprint(far, [data])


def test_fingerprint_leaves_out_a_heads_test_time_arguments(tmp_path):
    """The CAM head's box-scoring settings (``WSODCAMHead.TEST_TIME_ARGS``) do not retrain the
    black box; its classifier's arguments do."""
    data = tmp_path / "train.json"
    data.write_text("[1]")
    scoring = dict(type="mass_minus_area", area_weight=1.0)
    head = dict(type="WSODCAMHead", num_classes=5, in_channels=1280, scoring=scoring)
    base = rn.run_fingerprint(make_cfg(**{"model.roi_head": head}), [data])
    for change in (
        {"scoring": dict(type="thresholded", thr=0.5)},
        {"refine": dict(type="colour", iters=10, dilations=(1, 2))},
        {"scoring": dict(scoring, area_weight=0.7), "upsample": 4},
    ):
        changed = make_cfg(**{"model.roi_head": dict(head, **change)})
        assert rn.run_fingerprint(changed, [data]) == base, change
        # version 2 (run files of the previous version) counted them
        assert rn.run_fingerprint(changed, [data], version=2) != rn.run_fingerprint(
            make_cfg(**{"model.roi_head": head}), [data], version=2
        )
    for change in ({"in_channels": 320}, {"num_classes": 6}, {"dropout": 0.2}):
        changed = make_cfg(**{"model.roi_head": dict(head, **change)})
        assert rn.run_fingerprint(changed, [data]) != base, change


def fake_run(work, fingerprint=None, record=None):
    work.mkdir(parents=True, exist_ok=True)
    for i in (1, 2):
        (work / f"iter_{i}.pth").write_bytes(b"x")
    (work / "last_checkpoint").write_text(str(work / "iter_2.pth"))
    if record is not None or fingerprint is not None:
        rec = dict(record or {}, **({"fingerprint": fingerprint} if fingerprint else {}))
        (work / "run.json").write_text(json.dumps(rec))


def test_resume_point(tmp_path):
    # nothing to resume
    assert rn.resume_point(tmp_path / "empty", tmp_path / "empty/run.json", "f") == (None, None)
    # the same run resumes from its last checkpoint
    fake_run(tmp_path / "same", "f")
    last, stale = rn.resume_point(tmp_path / "same", tmp_path / "same/run.json", "f")
    assert last.endswith("iter_2.pth") and stale is None
    # another run: its checkpoints and run file move aside, nothing is deleted
    work = tmp_path / "other"
    fake_run(work, "g")
    last, stale = rn.resume_point(work, work / "run.json", "f")
    assert last is None and stale.parent == work / "stale"
    assert sorted(p.name for p in stale.iterdir()) == [
        "iter_1.pth",
        "iter_2.pth",
        "last_checkpoint",
        "run.json",
    ]
    assert not list(work.glob("iter_*.pth")) and rn.latest_checkpoint(work) is None
    # older run files without a fingerprint: the stage's own test decides; none: resume
    fake_run(tmp_path / "legacy", record={"train_sha256": "s"})
    same = lambda rec: rec["train_sha256"] == "t"  # noqa: E731
    last, stale = rn.resume_point(tmp_path / "legacy", tmp_path / "legacy/run.json", "f", same)
    assert last is None and stale is not None
    # a run file of an older version holds the version-1 fingerprint: still the same run
    fake_run(tmp_path / "v1", "h")
    last, stale = rn.resume_point(tmp_path / "v1", tmp_path / "v1/run.json", "v2:f", None, "h")
    assert last.endswith("iter_2.pth") and stale is None
    # ... or the version-2 one: any of the older versions' fingerprints of the same run
    fake_run(tmp_path / "v2", "v2:g")
    old = ("h", "v2:g")
    last, stale = rn.resume_point(tmp_path / "v2", tmp_path / "v2/run.json", "v3:f", None, old)
    assert last.endswith("iter_2.pth") and stale is None
    fake_run(tmp_path / "norecord")
    last, _ = rn.resume_point(tmp_path / "norecord", tmp_path / "norecord/run.json", "f")
    assert last.endswith("iter_2.pth")

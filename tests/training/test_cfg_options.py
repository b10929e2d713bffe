"""Strict ``--cfg-options``: a key the resolved config lacks is refused (naming the key, the
config file and the near matches) unless written ``+key``; the same check covers a pipeline
file's ``cfg_options`` and the committed pipelines pass it."""

from __future__ import annotations

from pathlib import Path

import pytest
from mmengine.config import Config

from wsod import training as tr

REPO = Path(__file__).resolve().parents[2]
STRONG_DEMO = (
    REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py"
)
CAM_DEMO = REPO / "configs/cam/cam_mobilenetv2_demo.py"


def small_cfg() -> Config:
    return Config(
        dict(
            model=dict(test_cfg=dict(score_thr=0.05, nms=dict(iou_threshold=0.5))),
            train_dataloader=dict(dataset=dict(pipeline=[dict(type="A"), dict(type="B", n=1)])),
        )
    )


def test_known_keys_merge_and_unknown_keys_are_refused_with_near_matches():
    cfg = small_cfg()
    tr.merge_cfg_options(
        cfg, {"model.test_cfg.score_thr": 0.0, "train_dataloader.dataset.pipeline.1.n": 5}
    )
    assert cfg.model.test_cfg.score_thr == 0.0 and cfg.train_dataloader.dataset.pipeline[1].n == 5
    with pytest.raises(tr.ConfigKeyError) as err:
        tr.merge_cfg_options(cfg, {"model.test_cfg.score_thrr": 0}, "my_config.py")
    msg = str(err.value)
    assert "model.test_cfg.score_thrr" in msg and "my_config.py" in msg
    assert "did you mean model.test_cfg.score_thr" in msg and "+model.test_cfg.score_thrr" in msg
    assert cfg.model.test_cfg.score_thr == 0.0  # nothing merged
    for bad in ("modle.test_cfg", "train_dataloader.dataset.pipeline.2.n", "model.test_cfg.nms.x"):
        with pytest.raises(tr.ConfigKeyError, match="has no key"):
            tr.merge_cfg_options(cfg, {bad: 1})


def test_new_keys_need_the_plus_prefix():
    cfg = small_cfg()
    tr.merge_cfg_options(cfg, {"+model.test_cfg.flip": True, "+extra.deep.key": [1, 2]})
    assert cfg.model.test_cfg.flip is True and cfg.extra.deep.key == [1, 2]
    assert cfg.model.test_cfg.score_thr == 0.05


def test_probe_a_misspelled_threshold_of_a_real_config_is_refused():
    class StageError(ValueError):
        pass

    with pytest.raises(StageError) as err:
        tr.load_config(STRONG_DEMO, {"model.test_cfg.rcnn.score_thrr": 0}, error=StageError)
    msg = str(err.value)
    assert str(STRONG_DEMO) in msg and "model.test_cfg.rcnn.score_thr" in msg
    cfg = tr.load_config(STRONG_DEMO, {"model.test_cfg.rcnn.score_thr": 0}, error=StageError)
    assert cfg.model.test_cfg.rcnn.score_thr == 0


def test_cli_and_pipeline_cfg_options_are_checked(voc_root, tmp_path, capsys):
    """``wsod weak`` refuses the probe, from the command line and from a pipeline file."""
    from wsod.cli import main
    from wsod.stages.data import run

    run(voc_root, tmp_path / "data", format="voc", splits=("train",), limit=1)
    split = tmp_path / "data" / "train.json"
    argv = [
        "weak",
        "--config",
        str(CAM_DEMO),
        "--work-dir",
        str(tmp_path / "w"),
        "--train-split",
        str(split),
    ]
    assert main([*argv, "--cfg-options", "model.roi_head.test_cfg.score_thrr=0"]) == 1
    err = capsys.readouterr().err
    assert "score_thrr" in err and str(CAM_DEMO) in err and "score_thr" in err
    pipe = tmp_path / "p.py"
    pipe.write_text("weak = dict(cfg_options={'model.roi_head.test_cfg.score_thrr': 0})\n")
    assert main([*argv, "--pipeline", str(pipe)]) == 1
    assert "score_thrr" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()  # refused before anything was written


@pytest.mark.parametrize(
    "pipeline", sorted((REPO / "pipelines").glob("*.py")), ids=lambda p: p.name
)
def test_committed_pipelines_pass_the_check(pipeline):
    from wsod.pipeline import load_pipeline

    pipe = load_pipeline(pipeline)
    for stage in ("weak", "strong"):
        section = pipe.get(stage) or {}
        cfg = tr.load_config(REPO / section["config"], section.get("cfg_options"))
        assert cfg.model is not None
    # the Makefile's rescore step: the CAM black box's image scores
    if "cam" in pipe["weak"]["config"]:
        from wsod.rescoring import IMAGE_SCORES_CFG_OPTIONS

        tr.load_config(REPO / pipe["weak"]["config"], IMAGE_SCORES_CFG_OPTIONS)


@pytest.mark.parametrize(
    "opt", ["model.roi_head.refine=dict(iters=10,dilations=(1,2))", "x=dict(a=1)"]
)
def test_a_dict_value_is_refused_with_the_syntax_that_works(opt):
    from wsod.commands import parse_cfg_options

    # mmengine's DictAction recurses forever on the first and keeps the second as a string
    with pytest.raises(ValueError, match=r"one KEY\.SUB=VALUE per entry"):
        parse_cfg_options([opt])
    parsed = parse_cfg_options(["a.b=1", "c=[1,2]", "+d.e=(1,2)", "f=none_of_these"])
    assert parsed == {"a.b": 1, "c": [1, 2], "+d.e": (1, 2), "f": "none_of_these"}

"""``python -m wsod.pipeline.estimate``: the run-time estimate of a pipeline on this machine
(``make estimate``; :mod:`wsod.report.estimate` does the arithmetic).

``make estimate`` makes the real run's data splits (seconds), runs the quick look (``make all
QUICK=1`` with its own proposal cache, so selective search is timed, not read back) and then::

    python -m wsod.pipeline.estimate PIPELINE --quick-run work_dirs/<name>_quick \\
        --data work_dirs/<name>/data --out work_dirs/<name>/estimate.json

prints the prediction of each stage and of the whole run and writes it. ``make all`` prints it
again when it starts and, at the end, the prediction beside what the run took::

    python -m wsod.pipeline.estimate --compare work_dirs/<name>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wsod.pipeline.core import load_pipeline
from wsod.report import estimate as est

USAGE = (
    "usage: python -m wsod.pipeline.estimate PIPELINE --quick-run DIR --data DIR [--out FILE]\n"
    "       python -m wsod.pipeline.estimate --show RUN_DIR | --compare RUN_DIR"
)
MODEL_FILES = {"weak": "weak/weak_model.json", "strong": "strong/strong_model.json",
               "fsd": "fsd/fsd_strong_model.json"}  # fmt: skip


def _schedule(config: str, section: dict) -> dict:
    """``{"iters", "phase_start"}`` of a training stage as the real run will train it: the
    config's schedule with the section's ``cfg_options``, ``max_iters`` and
    ``affinity_start_iter``."""
    from mmengine.config import Config

    cfg = Config.fromfile(str(config), import_custom_modules=False)
    options = {str(k).lstrip("+"): v for k, v in (section.get("cfg_options") or {}).items()}
    if options:
        cfg.merge_from_dict(options)
    iters = section.get("max_iters") or (cfg.get("train_cfg") or {}).get("max_iters")
    start = section.get("affinity_start_iter")
    if start is None:
        start = est.phase_start_of(cfg)
    return {"iters": int(iters or 0), "phase_start": start}


def trainings(pipeline: dict) -> dict:
    """The real run's schedules by model record (:data:`MODEL_FILES`)."""
    weak, strong = pipeline.get("weak") or {}, pipeline.get("strong") or {}
    out = {}
    if weak.get("config"):
        out[MODEL_FILES["weak"]] = _schedule(weak["config"], weak)
    if strong.get("config"):
        out[MODEL_FILES["strong"]] = _schedule(strong["config"], strong)
        fsd_config = pipeline.get("fsd_config") or strong["config"]
        out[MODEL_FILES["fsd"]] = _schedule(fsd_config, strong)
    return out


def split_images(data_dir: str | Path) -> dict[str, int]:
    """Images of the real run's ``train.json`` and ``val.json``."""
    out = {}
    for split in ("train", "val"):
        path = Path(data_dir) / f"{split}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such split; make the run's data first (make data)")
        out[split] = len(json.loads(path.read_text())["images"])
    return out


def _compare(run_dir: Path) -> str:
    from wsod.report.cost import format_duration

    saved = json.loads((run_dir / "estimate.json").read_text())
    lines = [f"Estimate beside the run ({run_dir}; {saved['cpu']}):"]
    for row in est.compare(saved, est.read_rows(run_dir)):
        ratio = "" if row["ratio"] is None else f"  actual / predicted {row['ratio']:.2f}"
        lines.append(f"  {row['stage']:9s} predicted {format_duration(row['predicted_s']):>20s}"
                     f"  took {format_duration(row['actual_s']):>20s}{ratio}")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """See the module docstring."""
    if len(argv) == 2 and argv[0] in ("--show", "--compare"):
        run_dir = Path(argv[1])
        if not (run_dir / "estimate.json").is_file():
            raise SystemExit(f"{run_dir}/estimate.json: no estimate; run make estimate first")
        if argv[0] == "--show":
            print(est.format_estimate(json.loads((run_dir / "estimate.json").read_text())))
        else:
            print(_compare(run_dir))
        return 0
    if not argv or argv[0].startswith("-") or "--quick-run" not in argv or "--data" not in argv:
        raise SystemExit(USAGE)
    opts = dict(zip(argv[1::2], argv[2::2], strict=False))
    try:
        pipeline = load_pipeline(argv[0])
        result = est.predict(opts["--quick-run"], split_images(opts["--data"]), trainings(pipeline))
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"wsod.pipeline.estimate: error: {e}") from None
    print(est.format_estimate(result))
    if opts.get("--out"):
        from wsod.utils.io import write_json

        write_json(opts["--out"], result, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""ORACLE DIAGNOSTIC (issue 53): the shell lines that train and evaluate every variant of
``benchmarks/oracle_labels.py`` (``oracle_labels.py commands``), as the Makefile's strong (and
fsd) rule and evaluate rule do, then build the table (``oracle_labels.py table``)."""

from __future__ import annotations

from collections import defaultdict

from benchmarks.oracle_labels import LARGEST, TITLES, VARIANTS, variant_file


def train_commands(
    pipeline: str, run: str, out: str, seeds: list[int], precision: str | None = None
) -> list[str]:
    """Shell lines that train and evaluate every variant on each seed, as the Makefile's strong
    (and fsd) rule and evaluate rule do, then build the table (module docstring)."""
    from wsod.pipeline.core import load_pipeline, make_values

    v = make_values(pipeline)
    run_seed = int((load_pipeline(pipeline).get("strong") or {}).get("seed") or 0)
    py, data = ".venv/bin/python", f"{run}/data"
    jobs = [(k, f"--pseudo-labels {out}/{variant_file(k)}", "STRONG") for k in VARIANTS]
    jobs.append(("pseudo", f"--pseudo-labels {run}/denoise/pseudo_train.json", "STRONG"))
    jobs.append(("real", f"--fully-supervised-gt {data}/train_gt.json", "FSD"))
    in_run = {"pseudo": f"{run}/eval/metrics.json:strong", "real": f"{run}/eval/metrics.json:fsd"}
    lines, rows = [], defaultdict(list)
    for seed in seeds:  # every variant's first seed first: the second seeds may be left out
        for name, train, which in jobs:
            if name in in_run and seed == run_seed:  # the run trained it: no need to repeat
                rows[name].append(in_run[name])
                continue
            work = f"{out}/{name}_seed{seed}"
            props = v[f"PIPE_{which}_READS_PROPOSALS"] == "1"
            args = [f"--pipeline {pipeline}", f"--config {v[f'PIPE_{which}_CONFIG']}", train]
            args += [f"--work-dir {work}", f"--seed {seed}"]
            args += [f"--precision {precision}"] if precision else []
            if v["PIPE_BACKBONE_FROM_BLACK_BOX"] == "1":
                args.append(f"--init-backbone {run}/weak/weak_model.json")
            if props:
                args.append(f"--train-proposals {run}/proposals/train.pkl")
            val_props = f":{run}/proposals/val.pkl" if props else ""
            args.append(f"--infer {data}/val.json{val_props}:{work}/val_dets.json")
            lines.append(f"{py} -m wsod strong " + " ".join(args))
            lines.append(
                f"{py} -m wsod evaluate --gt {data}/val_gt.json "
                f"--detections {name}_seed{seed}={work}/val_dets.json --out {work}/metrics.json"
            )
            rows[name].append(f"{work}/metrics.json")
    titles = {"pseudo": "pseudo labels", "real": "real boxes", **TITLES}
    table = [f"{py} benchmarks/oracle_labels.py table --gt {data}/val_gt.json"]
    for k in ("pseudo", "correct_only", "snapped", "one_real_box", LARGEST, "real"):
        table.append(f"--row {titles[k]!r} " + " ".join(rows[k]))
    return lines + [" ".join(table) + f" --out {out}/oracle_table.md"]

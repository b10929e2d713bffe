"""Reading a pipeline file: its sections and values, the make fragment and the stage stamps
(see :mod:`wsod.pipeline`)."""

from __future__ import annotations

import os
from pathlib import Path

from wsod.utils.names import near_match

# what a pipeline holds beside its stage sections (one dict of `wsod <stage>` options each):
# run_name (read by nothing: the run folder is named after the file; accepted when it equals
# the file's name, refused otherwise by check_values), the fully supervised reference (fsd =
# 0/1) and its config (default: strong's), self-training rounds, rescore_by_black_box ('off',
# 'detections' or 'image') and backbone_from_black_box (0/1: the strong detectors' backbone
# starts from the black box's trunk, `wsod strong --init-backbone`)
VALUES = (
    "run_name",
    "fsd",
    "fsd_config",
    "rounds",
    "rescore_by_black_box",
    "backbone_from_black_box",
)
MAX_ROUNDS = 9  # the Makefile's round ids are 1..9


def check_pipeline(pipeline: dict, path: str | os.PathLike) -> None:
    """Refuse what a pipeline file may not hold: unknown sections, stage sections that are not
    dicts, and stage keys that are not options of ``wsod <stage>``.

    Raises:
        ValueError: naming ``path``, the wrong name and the nearest known one.
    """
    from wsod import STAGES
    from wsod.commands import stage_options

    for key, section in pipeline.items():
        if key in VALUES:
            continue
        if key not in STAGES:
            raise ValueError(
                f"{path}: unknown section '{key}'{near_match(key, [*STAGES, *VALUES])}; a pipeline "
                f"holds the stage sections {', '.join(STAGES)} and the values "
                f"{', '.join(VALUES)}"
            )
        if section is None:
            continue
        if not isinstance(section, dict):
            raise ValueError(
                f"{path}: '{key}' must be a dict of `wsod {key}` options, not {section!r}"
            )
        options = stage_options(key)
        for name in section:
            if name not in options:
                raise ValueError(
                    f"{path}: {key}.{name} is not an option of `wsod {key}`"
                    f"{near_match(name, options)}; the options are {', '.join(options)} "
                    f"(`wsod {key} --help`, dashes as underscores)"
                )


def load_pipeline(path: str | os.PathLike) -> dict:
    """The pipeline file as a dict, checked by :func:`check_pipeline`."""
    from mmengine.config import Config

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such pipeline file (see pipelines/ for examples)")
    pipeline = Config.fromfile(str(path)).to_dict()
    check_pipeline(pipeline, path)
    return pipeline


def weak_trains_on_proposals(pipeline: dict) -> bool:
    """Whether the pipeline's weak config trains on proposals (its ``train_reads_proposals``,
    default True; False for the CAM head). Read without importing the model code."""
    cfg = weak_config(pipeline)
    if cfg is None:
        return True
    from wsod.stages.weak import trains_on_proposals

    return trains_on_proposals(cfg)


def config_reads_proposals(config: str | os.PathLike | None) -> bool:
    """Whether a strong config's detector reads precomputed proposals (``reads_proposals =
    True``: ``projects/fast_rcnn/configs/``), so make gives it the pipeline's; False for a missing file
    (the check names it). Read without importing the model code."""
    from mmengine.config import Config

    from wsod.training.proposal_inputs import reads_proposals

    if not config or not Path(config).is_file():
        return False
    return reads_proposals(Config.fromfile(str(config), import_custom_modules=False))


def weak_config(pipeline: dict):
    """The weak section's config (mmengine ``Config``, custom modules not imported), or None
    when the pipeline names none or the file is missing."""
    from mmengine.config import Config

    config = (pipeline.get("weak") or {}).get("config")
    if not config or not Path(config).is_file():
        return None
    return Config.fromfile(str(config), import_custom_modules=False)


def flag_value(path, key: str, value) -> str:
    """A pipeline boolean (False/True, 0/1, None) as ``'0'`` or ``'1'``."""
    if value is None or (isinstance(value, (bool, int)) and value in (0, 1)):
        return str(int(bool(value)))
    raise ValueError(f"{path}: {key} = {value!r}; want 0 or 1 (False or True)")


def rounds_value(path, value) -> str:
    if value is None:
        return "0"
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ROUNDS:
        raise ValueError(f"{path}: rounds = {value!r}; want a whole number from 0 to {MAX_ROUNDS}")
    return str(value)


def config_files(path: str | os.PathLike) -> list[str]:
    """A config (or pipeline) file and every local ``_base_`` file it inherits, in read order.

    Files of another package (``mmdet::...``) are left out: they change only with the package.
    """
    from mmengine.config import Config

    files = [str(path)]
    for base in Config._get_base_files(str(path)):
        if "::" not in base:
            files += config_files(os.path.normpath(Path(path).parent / base))
    return files


def make_values(path: str | os.PathLike, named: str | os.PathLike | None = None) -> dict[str, str]:
    """The pipeline's values for the Makefile, named and normalised (booleans ``0``/``1``,
    absent configs empty), keyed by make variable name.

    ``PIPE_SOURCES`` lists the files the values were read from (the pipeline, its ``_base_``
    files, the weak, strong and reference configs and their bases): the Makefile regenerates
    its fragment when one of them changes.

    Args:
        path: the pipeline file the stages read.
        named: the file the user named when ``path`` is derived from it (the quick look,
            :func:`write_quick_pipeline`); ``PIPE_FILE`` and ``PIPE_SOURCES`` name it instead.
    """
    from wsod.rescoring import IMAGE_SCORES_CFG_OPTIONS, black_box_mode

    pipeline = load_pipeline(path)
    weak = pipeline.get("weak") or {}
    strong_config = (pipeline.get("strong") or {}).get("config") or ""
    fsd_config = pipeline.get("fsd_config") or strong_config
    weak_cfg = weak_config(pipeline)
    rescore = black_box_mode(pipeline.get("rescore_by_black_box"), weak_cfg, where=path)
    named = path if named is None else named
    sources = config_files(named) + (config_files(weak["config"]) if weak_cfg else [])
    sources += [f for c in (strong_config, fsd_config) if c and Path(c).is_file()
                for f in config_files(c)]  # fmt: skip
    return {
        "PIPE_FILE": str(named),
        "PIPE_SOURCES": " ".join(dict.fromkeys(sources)),
        "PIPE_WEAK_CONFIG": weak.get("config") or "",
        "PIPE_WEAK_TRAIN_READS_PROPOSALS": str(int(weak_trains_on_proposals(pipeline))),
        "PIPE_STRONG_CONFIG": strong_config,
        "PIPE_STRONG_READS_PROPOSALS": str(int(config_reads_proposals(strong_config))),
        "PIPE_FSD_READS_PROPOSALS": str(int(config_reads_proposals(fsd_config))),
        "PIPE_FSD": flag_value(path, "fsd", pipeline.get("fsd")),
        "PIPE_BACKBONE_FROM_BLACK_BOX": flag_value(
            path, "backbone_from_black_box", pipeline.get("backbone_from_black_box")
        ),
        "PIPE_FSD_CONFIG": fsd_config,
        "PIPE_ROUNDS": rounds_value(path, pipeline.get("rounds")),
        "PIPE_RESCORE": rescore,
        "PIPE_IMAGE_SCORES_CFG_OPTIONS": " ".join(
            f"{k}={v}" for k, v in IMAGE_SCORES_CFG_OPTIONS.items()
        ),
    }


# the quick look (`make all QUICK=1`): every stage on a few images, every training a few steps


def write_if_changed(file: Path, text: str) -> bool:
    """Write ``text`` to ``file`` (temp file + rename) unless it already holds it."""
    if file.is_file() and file.read_text() == text:
        return False
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(file)
    return True


def write_vars_mk(
    path: str | os.PathLike, out: str | os.PathLike, named: str | os.PathLike | None = None
) -> bool:
    """Write :func:`make_values` as a make fragment ``out``, only where its content changed.

    An unchanged fragment is touched instead, so that make sees it newer than its sources and
    does not regenerate it on every call.

    Returns:
        Whether the content changed.
    """
    values = make_values(path, named)
    lines = [f"# pipeline values of {path}: written by `python -m wsod.pipeline`; do not edit"]
    lines += [f"{name} := {value}" for name, value in values.items()]
    out = Path(out)
    changed = write_if_changed(out, "\n".join(lines) + "\n")
    if not changed:
        out.touch()
    return changed


STAMPED_SECTIONS = (
    "data",
    "proposals",
    "weak",
    "denoise",
    "strong",
    "fsd_config",
    "rescore_by_black_box",
    "backbone_from_black_box",
    "evaluate",
    "report",
)


def write_section_stamps(path: str | os.PathLike, out_dir: str | os.PathLike) -> list[Path]:
    """Write ``<out_dir>/<section>.json`` for each stage section, only where its content changed.

    Make rules depend on these stamps instead of the pipeline file, so editing one stage's
    settings reruns that stage and what follows it, not the stages before it. A section the
    pipeline does not have is stamped as ``null``.

    Returns:
        The stamps that were (re)written.
    """
    import json

    pipeline = load_pipeline(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in STAMPED_SECTIONS:
        text = json.dumps(pipeline.get(name), sort_keys=True, indent=1, default=str) + "\n"
        stamp = out / f"{name}.json"
        if write_if_changed(stamp, text):
            written.append(stamp)
    return written

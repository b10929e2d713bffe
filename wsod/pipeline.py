"""Pipeline files: one small mmengine-``Config`` python file per experiment.

A pipeline names which configs and parameters each stage uses, one dict per stage::

    data = dict(source='data/demo', format='voc', splits=['train', 'val'])
    proposals = dict(method='selective_search', max_boxes=500)
    weak = dict(config='configs/cam/...py')
    denoise = dict(strategies=[dict(type='label_consistency'), dict(type='top1')])
    strong = dict(config='configs/faster_rcnn/...py')
    fsd = 1  # also train the fully supervised reference on the real boxes
    fsd_config = 'configs/faster_rcnn/...py'  # optional; default: strong's config
    rescore_by_black_box = 'image'  # also evaluate strong/fsd rescored by the black box
                                    # (wsod rescore): 'image' a CAM's class probabilities,
                                    # 'detections' its detections, 'off' (default) none
    backbone_from_black_box = 1  # strong/fsd backbones start from the black box's trunk

Keys of a stage's dict are the long option names of ``wsod <stage>`` (dashes as underscores).
Loading is strict: a section or a stage key that does not exist is an error that names the file
and the nearest known name, so a typo never runs the defaults.

Values are checked up front too (:func:`check_values`, ``--check``), before any stage runs:
option types and ranges, the configs (they exist and load, every ``cfg_options`` key exists in
the resolved config, every ``type`` is registered, the black box's phases fit its schedule), the
de-noise strategies. ``make`` runs it whenever it reads the pipeline, so a typo stops ``make
all`` (and ``make -n all``) in seconds instead of when its stage runs, hours later.

For the Makefile, ``python -m wsod.pipeline FILE --check --stamps DIR --vars-mk DIR/vars.mk``
writes the pipeline's values as a make fragment (:func:`make_values`) and one stamp per stage
section (:func:`write_section_stamps`); each file is rewritten only when its content changes.
``--quick OUT.py`` first writes the quick-look pipeline (:func:`write_quick_pipeline`: a few
images, a few training steps; ``make all QUICK=1``) and describes that one instead.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

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


def _near(name: str, known) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, or an empty string."""
    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


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
                f"{path}: unknown section '{key}'{_near(key, [*STAGES, *VALUES])}; a pipeline "
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
                    f"{_near(name, options)}; the options are {', '.join(options)} "
                    f"(`wsod {key} --help`, dashes as underscores)"
                )


# ranges of numeric stage options (by dest) beyond their argparse type: (low, high), None = open
RANGES = {
    **dict.fromkeys(("max_iters", "workers", "max_boxes", "limit", "num_images"), (1, None)),
    "resize": (1, None),
    **dict.fromkeys(("affinity_start_iter", "seed", "min_size"), (0, None)),
    **dict.fromkeys(("iou_thr", "draw_thr", "min_coverage"), (0, 1)),
    "beyond": (0, None),
}


def _range_text(low, high) -> str:
    if high is None:
        return f">= {low}"
    return f"from {low} to {high}"


def _check_item(where: str, name: str, item, action) -> None:
    """One value of a stage option against its argparse ``choices``, ``type`` and range."""
    if action.choices is not None and item not in action.choices:
        near = _near(str(item), [str(c) for c in action.choices])
        raise ValueError(f"{where}: not one of {', '.join(map(str, action.choices))}{near}")
    if action.type not in (int, float):
        return
    want = (int,) if action.type is int else (int, float)
    if isinstance(item, bool) or not isinstance(item, want):
        raise ValueError(f"{where}: want {'a whole number' if action.type is int else 'a number'}")
    low, high = RANGES.get(name, (None, None))
    if (low is not None and item < low) or (high is not None and item > high):
        raise ValueError(f"{where}: want a value {_range_text(low, high)}")


def check_options(pipeline: dict, path: str | os.PathLike) -> None:
    """Every stage option's value against the parser of ``wsod <stage>`` (its ``choices`` and
    ``type``, as on the command line) and :data:`RANGES`; flags want True or False.

    Raises:
        ValueError: naming ``path``, the option, its value and what it wants.
    """
    from wsod.commands import STAGES, stage_actions

    for stage in STAGES:
        section = pipeline.get(stage) or {}
        actions = stage_actions(stage)
        for name, value in section.items():
            action = actions[name]
            if value is None:
                continue
            where = f"{path}: {stage}.{name} = {value!r}"
            if action.nargs == 0:  # store_true / store_const
                if not (isinstance(value, bool) or value in (0, 1)):
                    raise ValueError(f"{where}: want True or False")
                continue
            many = action.nargs in ("+", "*") or type(action).__name__ == "_AppendAction"
            for item in value if many and isinstance(value, list | tuple) else [value]:
                _check_item(where, name, item, action)


def load_pipeline(path: str | os.PathLike) -> dict:
    """The pipeline file as a dict, checked by :func:`check_pipeline`."""
    from mmengine.config import Config

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such pipeline file (see pipelines/ for examples)")
    pipeline = Config.fromfile(str(path)).to_dict()
    check_pipeline(pipeline, path)
    return pipeline


# `type` values that name no registry entry: mmcv ops found by name in mmcv.ops (NMS and the
# RoI layer), not built from a registry
_OP_TYPE_KEYS = ("nms", "roi_layer")


def _config_types(node, key: str = ""):
    """``(dotted key, type name)`` of every ``dict(type='...')`` in a config tree."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str) and key.rpartition(".")[2] not in _OP_TYPE_KEYS:
            yield key or "type", node["type"]
        for k, v in node.items():
            yield from _config_types(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            yield from _config_types(v, f"{key}.{i}")


def _registries() -> list:
    """mmdet's registries (which import their modules on first look-up), mmengine's and mmcv's
    transforms and layers: where a config's ``type`` names are looked up."""
    import mmcv.cnn
    import mmcv.transforms
    import mmdet.registry
    import mmengine.registry
    from mmengine.registry import Registry

    modules = (mmdet.registry, mmengine.registry, mmcv.transforms, mmcv.cnn)
    found = {id(v): v for m in modules for v in vars(m).values() if isinstance(v, Registry)}
    return list(found.values())


def _registered(registry, name: str) -> bool:
    try:
        return registry.get(name) is not None
    except Exception:  # noqa: BLE001 - an unknown scope prefix is "not there" too
        return False


def check_config_types(cfg, where: str) -> None:
    """Refuse a config whose ``type`` names an unregistered class (a typo that would fail only
    when its stage builds the model, hours later).

    Raises:
        ValueError: naming ``where``, the dotted key, the type and the nearest registered one.
    """
    registries = _registries()
    for key, name in _config_types(cfg.to_dict()):
        if any(_registered(r, name) for r in registries):
            continue
        known = {k for r in registries for k in r.module_dict}
        raise ValueError(f"{where}: unknown type {name!r} at {key}{_near(name, known)}")


def _no_such_file(path, key: str, config: str) -> ValueError:
    folder = Path(config).parent
    names = [str(folder / f.name) for f in folder.glob("*.py")] if folder.is_dir() else []
    return ValueError(
        f"{path}: {key} = {config!r}: no such config file{_near(config, names)} (see configs/)"
    )


def check_config(
    path: str | os.PathLike, key: str, config: str, section: dict, stage: str = "strong"
):
    """A stage's config file as its stage would prepare it: it exists and loads, the section's
    ``cfg_options`` keys exist in it (the CLI's rule, ``+key`` for a new one), ``max_iters``
    (and, for the weak stage, ``affinity_start_iter``) apply, every ``type`` is registered.

    Returns:
        The loaded ``Config`` with the section's settings applied.

    Raises:
        ValueError: naming ``path``, the key (``weak.config``, ...) and the fix.
    """
    from mmengine.config import Config

    from wsod.commands import parse_cfg_options
    from wsod.training.config import ConfigKeyError, merge_cfg_options, set_max_iters

    if not Path(config).is_file():
        raise _no_such_file(path, key, config)
    where = f"{path}: {key} = {config!r}"
    try:
        cfg = Config.fromfile(str(config))
    except Exception as e:  # noqa: BLE001 - any load error is the config's, named here
        raise ValueError(f"{where} does not load: {e}") from None
    try:
        merge_cfg_options(cfg, parse_cfg_options(section.get("cfg_options")), config)
        if section.get("max_iters") is not None:
            set_max_iters(cfg, section["max_iters"])
        if stage == "weak":
            _check_phase(cfg, config, section)
    except (ConfigKeyError, ValueError) as e:
        raise ValueError(f"{path}: {stage}: {e}") from None
    check_config_types(cfg, where)
    return cfg


def _check_phase(cfg, config: str, section: dict) -> None:
    from wsod.models.affinity_phase_hook import schedule_error, set_phase_start

    if section.get("affinity_start_iter") is not None:
        set_phase_start(cfg, section["affinity_start_iter"], config)
    if (why := schedule_error(cfg)) is not None:
        raise ValueError(why)


def _check_strategies(pipeline: dict, path) -> None:
    """The de-noise chain as the stage builds it: registered strategies, known parameters."""
    from wsod.denoise import STRATEGIES, build_chain

    strategies = (pipeline.get("denoise") or {}).get("strategies")
    try:
        build_chain(strategies)
    except KeyError as e:
        name = str(e.args[0]).split("'")[1] if "'" in str(e.args[0]) else ""
        raise ValueError(
            f"{path}: denoise.strategies: {e.args[0]}{_near(name, STRATEGIES)}"
        ) from None
    except (ValueError, TypeError, OSError) as e:
        raise ValueError(f"{path}: denoise.strategies: {e}") from None


def _check_run_name(pipeline: dict, path) -> None:
    """``run_name`` is read by nothing but this check: the run folder is named after the file
    (``work_dirs/<file stem>``, ``RUN=`` to choose another)."""
    name = pipeline.get("run_name")
    if name is not None and name != Path(path).stem:
        raise ValueError(
            f"{path}: run_name = {name!r} is not read: the run folder is named after the "
            f"pipeline file (work_dirs/{Path(path).stem}); remove the line and rename the file, "
            "or give make RUN=work_dirs/<name>"
        )


def check_values(path: str | os.PathLike, named: str | os.PathLike | None = None) -> dict:
    """The up-front check of a pipeline's values, before any stage runs (``make`` runs it when
    it reads the pipeline; ``python -m wsod.pipeline FILE --check``): what :func:`load_pipeline`
    checks (sections, option names), then option types and ranges (:func:`check_options`), the
    top-level values, the weak, strong and reference configs (:func:`check_config`: they exist
    and load, their ``cfg_options`` keys exist, their ``type`` names are registered; the weak
    phases fit the schedule) and the de-noise strategies (registered, known parameters).

    Args:
        path: the pipeline file.
        named: the file the user named when ``path`` is derived from it (the quick look):
            ``run_name`` is compared with its name.

    Returns:
        The pipeline, checked.

    Raises:
        ValueError: the first wrong value, naming ``path``, the key and the fix.
    """
    pipeline = load_pipeline(path)
    check_options(pipeline, path)
    _check_run_name(pipeline, path if named is None else named)
    _flag(path, "fsd", pipeline.get("fsd"))
    _rounds(path, pipeline.get("rounds"))
    weak, strong = pipeline.get("weak") or {}, pipeline.get("strong") or {}
    weak_cfg = None
    if weak.get("config"):
        weak_cfg = check_config(path, "weak.config", weak["config"], weak, "weak")
    from wsod.stages.rescore import black_box_mode

    black_box_mode(pipeline.get("rescore_by_black_box"), weak_cfg, where=path)
    if strong.get("config"):
        check_config(path, "strong.config", strong["config"], strong)
    fsd_config = pipeline.get("fsd_config")
    if fsd_config and _flag(path, "fsd", pipeline.get("fsd")) == "1":
        check_config(path, "fsd_config", fsd_config, strong)
    _check_strategies(pipeline, path)
    return pipeline


def weak_trains_on_proposals(pipeline: dict) -> bool:
    """Whether the pipeline's weak config trains on proposals (its ``train_reads_proposals``,
    default True; False for the CAM head). Read without importing the model code."""
    cfg = _weak_config(pipeline)
    if cfg is None:
        return True
    from wsod.stages.weak import trains_on_proposals

    return trains_on_proposals(cfg)


def _weak_config(pipeline: dict):
    """The weak section's config (mmengine ``Config``, custom modules not imported), or None
    when the pipeline names none or the file is missing."""
    from mmengine.config import Config

    config = (pipeline.get("weak") or {}).get("config")
    if not config or not Path(config).is_file():
        return None
    return Config.fromfile(str(config), import_custom_modules=False)


def _flag(path, key: str, value) -> str:
    """A pipeline boolean (False/True, 0/1, None) as ``'0'`` or ``'1'``."""
    if value is None or (isinstance(value, (bool, int)) and value in (0, 1)):
        return str(int(bool(value)))
    raise ValueError(f"{path}: {key} = {value!r}; want 0 or 1 (False or True)")


def _rounds(path, value) -> str:
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
    weak_cfg = _weak_config(pipeline)
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
        "PIPE_FSD": _flag(path, "fsd", pipeline.get("fsd")),
        "PIPE_BACKBONE_FROM_BLACK_BOX": _flag(
            path, "backbone_from_black_box", pipeline.get("backbone_from_black_box")
        ),
        "PIPE_FSD_CONFIG": fsd_config,
        "PIPE_ROUNDS": _rounds(path, pipeline.get("rounds")),
        "PIPE_RESCORE": rescore,
        "PIPE_IMAGE_SCORES_CFG_OPTIONS": " ".join(
            f"{k}={v}" for k, v in IMAGE_SCORES_CFG_OPTIONS.items()
        ),
    }


# the quick look (`make all QUICK=1`): every stage on a few images, every training a few steps
QUICK_IMAGES = 24  # per split (data.limit): the first images of each split
QUICK_ITERS = 10  # weak and strong (and fsd, rounds) training iterations
QUICK_BOXES = 200  # proposals per image


def quick_pipeline_text(path: str | os.PathLike) -> str:
    """A pipeline that inherits ``path`` and shrinks it to a quick look: ``data.limit``,
    ``proposals.max_boxes``, ``max_iters`` of the weak and strong stages and, for a two-phase
    black box, the affinity phase's start (the last fifth; ``weak.affinity_start_iter``)."""
    from wsod.models.affinity_phase_hook import PHASE_OPTION, phase_hook

    pipeline = load_pipeline(path)
    weak_cfg = _weak_config(pipeline)
    phase = f", {PHASE_OPTION}={QUICK_ITERS * 4 // 5}" if weak_cfg and phase_hook(weak_cfg) else ""
    return "\n".join(
        [
            f"# the quick look of {path}: written by `python -m wsod.pipeline --quick`; do not"
            " edit (make all QUICK=1)",
            f"_base_ = [{str(Path(path).resolve())!r}]",
            f"data = dict(limit={QUICK_IMAGES})",
            f"proposals = dict(max_boxes={QUICK_BOXES})",
            f"weak = dict(max_iters={QUICK_ITERS}{phase})",
            f"strong = dict(max_iters={QUICK_ITERS})",
            "",
        ]
    )


def write_quick_pipeline(path: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Write :func:`quick_pipeline_text` to ``out`` (only where its content changed)."""
    out = Path(out)
    _write_if_changed(out, quick_pipeline_text(path))
    return out


def _write_if_changed(file: Path, text: str) -> bool:
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
    changed = _write_if_changed(out, "\n".join(lines) + "\n")
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
        if _write_if_changed(stamp, text):
            written.append(stamp)
    return written


USAGE = (
    "usage: python -m wsod.pipeline PIPELINE_FILE [--check] [--quick OUT.py] [--stamps DIR] "
    "[--vars-mk FILE]"
)


def _parse(argv: list[str]) -> dict:
    if not argv or argv[0].startswith("-"):
        raise SystemExit(USAGE)
    opts: dict = {"path": argv[0], "check": False}
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg in ("--stamps", "--vars-mk", "--quick") and rest:
            opts[arg[2:].replace("-", "_")] = rest.pop(0)
        elif arg == "--check":
            opts["check"] = True
        else:
            raise SystemExit(USAGE)
    if not (opts.get("stamps") or opts.get("vars_mk") or opts["check"]):
        raise SystemExit(USAGE)
    return opts


def main(argv: list[str]) -> int:
    """``python -m wsod.pipeline FILE [--check] [--quick OUT] [--stamps DIR] [--vars-mk FILE]``:
    check every value (:func:`check_values`), write the quick-look pipeline
    (:func:`write_quick_pipeline`; the other outputs then describe it), the stamps and the make
    fragment. No stamp or fragment is written when the check fails."""
    opts = _parse(argv)
    named = path = opts["path"]
    try:
        if opts.get("quick"):
            load_pipeline(named)
            path = str(write_quick_pipeline(named, opts["quick"]))
        if opts["check"]:
            check_values(path, named)
        if opts.get("stamps"):
            write_section_stamps(path, opts["stamps"])
        if opts.get("vars_mk"):
            write_vars_mk(path, opts["vars_mk"], named)
    except (ValueError, OSError, KeyError) as e:
        raise SystemExit(f"wsod.pipeline: error: {e}") from None
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))

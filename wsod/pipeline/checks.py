"""The up-front value check of a pipeline (:func:`check_values`, ``python -m wsod.pipeline
FILE --check``): see :mod:`wsod.pipeline`."""

from __future__ import annotations

import os
from pathlib import Path

from wsod.pipeline.core import flag_value, load_pipeline, rounds_value
from wsod.utils.names import near_match


def check_options(pipeline: dict, path: str | os.PathLike) -> None:
    """Every stage option's value against its declaration (the ``OPTIONS`` of ``wsod
    <stage>``: its ``choices`` and ``type``, as on the command line, and its range); flags want
    True or False. Each stage is asked for its own options: this loop knows none of them.

    Raises:
        ValueError: naming ``path``, the option, its value and what it wants.
    """
    from wsod.commands import STAGES, stage_declarations

    for stage in STAGES:
        section = pipeline.get(stage) or {}
        options = stage_declarations(stage)
        for name, value in section.items():
            options[name].check(value, f"{path}: {stage}.{name} = {value!r}")


# `type` values that name no registry entry: mmcv ops found by name in mmcv.ops (NMS and the
# RoI layer); and the CAM head's own option dicts, which it checks itself
# (`scoring=dict(type=...)`, `refine=dict(type=...)`: WSODCAMHead.check_cfg)
_OP_TYPE_KEYS = ("nms", "roi_layer", "scoring", "refine")


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


def _registered(registry, name: str):
    """The class ``registry`` holds under ``name``, or None."""
    try:
        return registry.get(name)
    except Exception:  # noqa: BLE001 - an unknown scope prefix is "not there" too
        return None


def check_config_types(cfg, where: str) -> None:
    """Refuse a config whose ``type`` names an unregistered class (a typo that would fail only
    when its stage builds the model, hours later).

    Raises:
        ValueError: naming ``where``, the dotted key, the type and the nearest registered one.
    """
    registries = _registries()
    tree = cfg.to_dict()
    for key, name in _config_types(tree):
        found = [c for r in registries if (c := _registered(r, name))]
        if not found:
            known = {k for r in registries for k in r.module_dict}
            raise ValueError(f"{where}: unknown type {name!r} at {key}{near_match(name, known)}")
        _check_own_options(found[0], _at(tree, key), f"{where}: {key}")


def _at(tree, key: str):
    """The node at a dotted key of :func:`_config_types` (``'type'``: the tree itself)."""
    node = tree
    for part in key.split(".") if key != "type" else []:
        node = node[int(part)] if isinstance(node, list | tuple) else node[part]
    return node


def _check_own_options(cls, options: dict, where: str) -> None:
    """A registered class that checks its own config dict (a ``check_cfg`` static method, e.g.
    ``WSODCAMHead``'s ``scoring`` and ``refine``) checks it here, before its stage builds it."""
    check = getattr(cls, "check_cfg", None)
    if not callable(check):
        return
    try:
        check(options)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _no_such_file(path, key: str, config: str) -> ValueError:
    folder = Path(config).parent
    names = [str(folder / f.name) for f in folder.glob("*.py")] if folder.is_dir() else []
    return ValueError(
        f"{path}: {key} = {config!r}: no such config file{near_match(config, names)} (see configs/)"
    )


def check_config(
    path: str | os.PathLike, key: str, config: str, section: dict, stage: str = "strong"
):
    """A stage's config file as its stage would prepare it: it exists and loads, the section's
    ``cfg_options`` keys exist in it (the CLI's rule, ``+key`` for a new one), ``max_iters``
    applies, the stage's own rules hold (a ``check_config`` of its command module, see
    :func:`wsod.commands.stage_config_check`: the weak stage's phases fit its schedule), every
    ``type`` is registered.

    Returns:
        The loaded ``Config`` with the section's settings applied.

    Raises:
        ValueError: naming ``path``, the key (``weak.config``, ...) and the fix.
    """
    from mmengine.config import Config

    from wsod.commands import parse_cfg_options, stage_config_check
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
        own_check = stage_config_check(stage)  # the stage's own rules (weak: its phases)
        if own_check is not None:
            own_check(cfg, config, section)
    except (ConfigKeyError, ValueError) as e:
        raise ValueError(f"{path}: {stage}: {e}") from None
    check_config_types(cfg, where)
    return cfg


def _check_strategies(pipeline: dict, path) -> None:
    """The de-noise chain as the stage builds it (registered strategies, known parameters),
    then run on no boxes: a strategy checks its values when it runs (``topk``'s ``k >= 1``), in
    no time on an empty detection set."""
    from wsod.denoise import STRATEGIES, apply_chain, build_chain
    from wsod.denoise.common import empty_dets

    strategies = (pipeline.get("denoise") or {}).get("strategies")
    try:
        chain = build_chain(strategies)
        apply_chain(empty_dets(), chain, image_labels=[], width=1, height=1)
    except KeyError as e:
        name = str(e.args[0]).split("'")[1] if "'" in str(e.args[0]) else ""
        raise ValueError(
            f"{path}: denoise.strategies: {e.args[0]}{near_match(name, STRATEGIES)}"
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
    flag_value(path, "fsd", pipeline.get("fsd"))
    rounds_value(path, pipeline.get("rounds"))
    weak, strong = pipeline.get("weak") or {}, pipeline.get("strong") or {}
    weak_cfg = None
    if weak.get("config"):
        weak_cfg = check_config(path, "weak.config", weak["config"], weak, "weak")
    from wsod.rescoring import black_box_mode

    black_box_mode(pipeline.get("rescore_by_black_box"), weak_cfg, where=path)
    if strong.get("config"):
        check_config(path, "strong.config", strong["config"], strong)
    fsd_config = pipeline.get("fsd_config")
    if fsd_config and flag_value(path, "fsd", pipeline.get("fsd")) == "1":
        check_config(path, "fsd_config", fsd_config, strong)
    _check_strategies(pipeline, path)
    return pipeline

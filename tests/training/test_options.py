"""The training stages' options dataclasses: one source of defaults, names checked."""

from __future__ import annotations

import dataclasses

import pytest

from wsod.commands import stage_actions
from wsod.stages.strong import StrongOptions
from wsod.stages.weak import WeakOptions
from wsod.training import DEFAULT_PRECISION, TrainOptions


def test_defaults_live_in_the_dataclass_and_values_replace_them():
    opts = WeakOptions.of(None, {"seed": 3, "max_iters": 50})
    assert (opts.seed, opts.max_iters, opts.resume) == (3, 50, True)
    assert opts.precision == DEFAULT_PRECISION and opts.affinity_start_iter is None
    # values replace the fields of a given object, the others are kept
    again = WeakOptions.of(opts, {"resume": False})
    assert (again.seed, again.max_iters, again.resume) == (3, 50, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.seed = 1  # type: ignore[misc]
    assert StrongOptions.of(None, {}) == StrongOptions()


def test_an_unknown_option_is_refused_by_name():
    with pytest.raises(TypeError, match=r"WeakOptions: unknown option\(s\) \['sed'\]"):
        WeakOptions.of(None, {"sed": 3})
    # a stage's own option is not another stage's
    with pytest.raises(TypeError, match="init_backbone"):
        WeakOptions.of(None, {"init_backbone": "weak_model.json"})
    with pytest.raises(TypeError, match="affinity_start_iter"):
        StrongOptions.of(None, {"affinity_start_iter": 4})


@pytest.mark.parametrize("stage, options", [("weak", WeakOptions), ("strong", StrongOptions)])
def test_every_field_is_an_option_of_the_command(stage, options):
    """Each field is a dest of `wsod <stage>` (so a pipeline section may set it), and the
    shared ones print the dataclass's default in --help."""
    actions = stage_actions(stage)
    assert set(options.names()) <= set(actions)
    assert set(TrainOptions.names()) < set(options.names())
    assert f"[{TrainOptions.seed}]" in actions["seed"].help
    assert f"[{TrainOptions.launcher}]" in actions["launcher"].help

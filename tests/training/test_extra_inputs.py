"""The strong stage's plug-in point for projects (wsod.training.extra_inputs): a config's
``strong_inputs`` is looked up in the registry, and an unknown name or bad argument is refused
with the fix named. The soft-teacher project's plug-in is tested with the project."""

from __future__ import annotations

import pytest
from mmengine.config import Config

from wsod.training.extra_inputs import STRONG_INPUTS, StrongInputs, build_strong_inputs


@STRONG_INPUTS.register_module(force=True)
class _TestInputs(StrongInputs):
    def __init__(self, which: str = "x") -> None:
        self.which = which


def test_a_config_without_strong_inputs_has_no_plugin():
    assert build_strong_inputs(Config(dict(model=dict(type="M"))), "c.py") is None


def test_the_registered_plugin_is_built_with_its_arguments():
    plugin = build_strong_inputs(
        Config(dict(strong_inputs=dict(type="_TestInputs", which="y"))), "c.py"
    )
    assert isinstance(plugin, _TestInputs) and plugin.which == "y"


def test_unknown_type_and_bad_arguments_name_the_fix():
    with pytest.raises(
        ValueError, match=r"c\.py: strong_inputs.type='Nope' is not registered.*custom_imports"
    ):
        build_strong_inputs(Config(dict(strong_inputs=dict(type="Nope"))), "c.py")
    with pytest.raises(ValueError, match=r"c\.py: strong_inputs=.*unexpected keyword"):
        build_strong_inputs(Config(dict(strong_inputs=dict(type="_TestInputs", whch="y"))), "c.py")

"""Modules of the strong stage (an mmdetection detector trained on pseudo labels)."""

from .finite_loss_hook import NonFiniteLossError, WSODFiniteLossHook  # noqa: F401

"""The detector's convolutions in channels_last: ``WSODChannelsLastHook`` (issue 41).

Registered into mmdet's ``HOOKS`` when a config of ``projects/channels_last/configs/`` imports
this package (``custom_imports``).
"""

from .channels_last_hook import WSODChannelsLastHook, contiguous

__all__ = ["WSODChannelsLastHook", "contiguous"]

"""Modules registered into mmdet's registries. Configs load them with
``custom_imports=dict(imports=['wsod.models'], allow_failed_imports=False)``.

Importing this package also allow-lists mmengine's checkpoint globals so runs can resume.
"""

from wsod.utils.mmengine_compat import enable_safe_resume

from . import semi, strong  # noqa: F401
from .affinity_phase_hook import WSODAffinityPhaseHook  # noqa: F401
from .backbones import *  # noqa: F401,F403
from .backbones.tv_vgg16 import WSODVGG16  # noqa: F401
from .cpu_share_hook import WSODCPUShareHook  # noqa: F401
from .detectors import *  # noqa: F401,F403
from .dump_results import WSODDumpCocoResults  # noqa: F401
from .roi_heads import *  # noqa: F401,F403

enable_safe_resume()

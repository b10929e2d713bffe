"""The shared training flow of the weak, strong and fully supervised reference stages.

One flow, five steps, each a small function the stages call with their own dataset wiring:

1. :func:`prepare_config` (``wsod.training.config``): load the mmdet config, merge
   ``--cfg-options`` strictly (a key the resolved config lacks is refused unless written
   ``+key=value``), set ``num_classes``, work dir, seed and launcher; the stage then points the
   config's datasets at its inputs (its *dataset wiring*: a small function per stage);
2. :func:`run_fingerprint` (``wsod.training.fingerprint``): what the run computes (training
   config + seed + training inputs), recorded in the stage's run file;
3. :func:`train_or_resume` (``wsod.training.flow``): resume only a run with the same
   fingerprint (another run's checkpoints move to ``<work_dir>/stale/<time>/``), skip training
   when the resumed checkpoint is the last one ("already finished"), else train with mmengine's
   ``Runner``; write the resolved config and the model record;
4. :func:`detect` (``wsod.training.flow``): ``runner.test()`` with ``WSODDumpCocoResults``
   writing the detections.

Multi-process runs (``--launcher pytorch`` under ``torchrun``, ``--launcher slurm`` under
``srun``) go through the same functions (``wsod.training.dist``): the process group is started
once (gloo on CPU, nccl on GPU), rank 0 alone writes artifacts and moves stale checkpoints,
the other ranks wait at a barrier and read the same checkpoint; detection runs on every rank,
each on its shard of the images (mmengine's ``DefaultSampler``), and rank 0 writes the merged
detections.

Plugging in another training stage (e.g. semi-supervised retraining with mmdet's
``SoftTeacher`` / ``MeanTeacherHook`` and multi-branch pipelines): its config carries the model
wrapper, hooks and pipelines; the stage writes one small dataset-wiring function (point the
config's datasets at its inputs) and fills a :class:`TrainJob` (``write_inputs`` /
``read_inputs`` for files it generates, ``train_without`` for the loops its training Runner
does not build); resume, the finished-run shortcut, stale checkpoints, launchers and detection
come from here unchanged. A strong config that needs one more training file (e.g.
``projects/soft_teacher``'s unlabelled images) names a registered ``strong_inputs`` plug-in
(:mod:`wsod.training.extra_inputs`) instead of changing the strong stage.

Layer: below ``wsod.stages``, above the domain packages (it imports ``wsod.models`` to register
the WSOD modules) and ``wsod.contracts`` / ``wsod.utils``.
"""

from wsod.training.config import (
    EVAL_KEYS,
    NEW_KEY_PREFIX,
    TEST_KEYS,
    TRAIN_KEYS,
    ConfigKeyError,
    add_cpu_share_hook,
    load_config,
    merge_cfg_options,
    prepare_config,
    set_max_iters,
    set_num_classes,
    set_runtime,
    without,
)
from wsod.training.dist import barrier, broadcast, is_main, setup_dist
from wsod.training.fingerprint import (
    FINGERPRINT_VERSION,
    LEGACY_VERSIONS,
    RUNTIME_KEYS,
    checkpoint_iter,
    latest_checkpoint,
    resume_point,
    run_fingerprint,
    set_resume,
    versioned_digest,
    without_test_cfg,
)
from wsod.training.flow import (
    Fingerprint,
    Trained,
    TrainJob,
    detect,
    detection_checkpoint,
    detection_config,
    experiment_name,
    train,
    train_or_resume,
    trained_checkpoint,
)
from wsod.training.options import TrainOptions
from wsod.training.precision import (
    DEFAULT_PRECISION,
    PRECISIONS,
    PrecisionChoice,
    choose_precision,
    resolve_precision,
    set_precision,
)

__all__ = [
    "ConfigKeyError",
    "DEFAULT_PRECISION",
    "EVAL_KEYS",
    "FINGERPRINT_VERSION",
    "Fingerprint",
    "LEGACY_VERSIONS",
    "NEW_KEY_PREFIX",
    "PRECISIONS",
    "PrecisionChoice",
    "RUNTIME_KEYS",
    "TEST_KEYS",
    "TRAIN_KEYS",
    "TrainJob",
    "TrainOptions",
    "Trained",
    "add_cpu_share_hook",
    "barrier",
    "broadcast",
    "checkpoint_iter",
    "choose_precision",
    "detect",
    "detection_checkpoint",
    "detection_config",
    "experiment_name",
    "is_main",
    "latest_checkpoint",
    "load_config",
    "merge_cfg_options",
    "prepare_config",
    "resolve_precision",
    "resume_point",
    "run_fingerprint",
    "set_max_iters",
    "set_num_classes",
    "set_precision",
    "set_resume",
    "set_runtime",
    "setup_dist",
    "train",
    "train_or_resume",
    "trained_checkpoint",
    "versioned_digest",
    "without",
    "without_test_cfg",
]

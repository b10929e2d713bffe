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

from wsod.pipeline.checks import (
    check_config,
    check_config_types,
    check_options,
    check_values,
)
from wsod.pipeline.core import (
    MAX_ROUNDS,
    STAMPED_SECTIONS,
    VALUES,
    check_pipeline,
    config_files,
    config_reads_proposals,
    load_pipeline,
    make_values,
    weak_trains_on_proposals,
    write_section_stamps,
    write_vars_mk,
)
from wsod.pipeline.quick import (
    QUICK_BOXES,
    QUICK_IMAGES,
    QUICK_ITERS,
    quick_pipeline_text,
    write_quick_pipeline,
)

__all__ = [
    "MAX_ROUNDS",
    "QUICK_BOXES",
    "QUICK_IMAGES",
    "QUICK_ITERS",
    "STAMPED_SECTIONS",
    "VALUES",
    "check_config",
    "check_config_types",
    "check_options",
    "check_pipeline",
    "check_values",
    "config_files",
    "config_reads_proposals",
    "load_pipeline",
    "make_values",
    "quick_pipeline_text",
    "weak_trains_on_proposals",
    "write_quick_pipeline",
    "write_section_stamps",
    "write_vars_mk",
]

"""Semi-supervised retraining on incomplete pseudo labels (mmdet's ``SoftTeacher`` machinery).

The labelled set is the train images whose pseudo labels a de-noise strategy trusts, the
unlabelled set the others (or every train image): the strong stage writes the unlabelled images
through this package's plug-in (:class:`WSODUnlabelledImages`, a config's ``strong_inputs``) and
trains a config whose model is :class:`WSODLabelRestrictedSoftTeacher`
(``projects/soft_teacher/configs/``, which import this package through ``custom_imports``). The
unlabelled images keep their image-level labels (:class:`WSODImageLabelCocoDataset`) and the
teacher's pseudo boxes on them are restricted to those classes. Never a ground-truth box.
"""

from .burn_in_hook import WSODBurnInHook, unsup_weight_at  # noqa: F401
from .image_label_data import IMAGE_LABELS_KEY, WSODImageLabelCocoDataset  # noqa: F401
from .label_restricted_teacher import (  # noqa: F401
    WSODLabelRestrictedSoftTeacher,
    restrict_to_image_labels,
    select_pseudo_instances,
)
from .split import (  # noqa: F401
    UNLABELED_CHOICES,
    labelled_image_ids,
    labels_from_boxes,
    unlabeled_split,
)
from .strong_inputs import WSODUnlabelledImages, image_labels  # noqa: F401

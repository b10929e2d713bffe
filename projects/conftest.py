"""The projects' tests share the core tests' fixtures (real VOC 2007 images from ../shared)."""

from tests.conftest import one_torch_thread, voc_root, voc_train_ids  # noqa: F401

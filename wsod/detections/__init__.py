"""Detections of other detectors: readers of a foreign black box's output (``importers``), beside
:mod:`wsod.proposals.importers` for foreign proposals."""

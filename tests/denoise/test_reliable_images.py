"""The ``reliable_images`` strategy (labelled / unlabelled split) on hand-made boxes whose
right answer is known, alone and in a batch, against ``image_filter``."""

from __future__ import annotations

import numpy as np
import pytest

from wsod.denoise import STRATEGIES, build_chain, denoise_images
from wsod.denoise.reliable import image_reliability

A = [0, 0, 50, 50]
B = [60, 60, 90, 90]


def dets(scores, labels):
    n = len(scores)
    return {
        "bboxes": np.array([A, B] * n, np.float64)[:n],
        "scores": np.array(scores, np.float64),
        "labels": np.array(labels, np.int64),
    }


def images(n, labels=(1, 2)):
    return [{"id": 10 + i, "width": 100, "height": 100, "labels": list(labels)} for i in range(n)]


def test_reliability_is_the_least_certain_labelled_class():
    # class 1's best box 0.9, class 2's best 0.4: the image is as reliable as class 2
    d = dets([0.9, 0.3, 0.4], [1, 1, 2])
    rel = image_reliability(d, np.array([1, 2]), 1)
    assert rel.tolist() == [0.4]
    # a labelled class without a box: unreliable whatever the other scores
    assert image_reliability(d, np.array([1, 2, 3]), 1).tolist() == [-np.inf]


def test_one_image_kept_unless_a_class_is_unfound_or_below_min_score():
    d = dets([0.9, 0.4], [1, 2])
    run = STRATEGIES["reliable_images"]
    kept = run(d, image_labels=np.array([1, 2]), width=100, height=100, fraction=0.5)
    assert kept["scores"].tolist() == [0.9, 0.4]
    gone = run(d, image_labels=np.array([1, 2]), width=100, height=100, min_score=0.5)
    assert len(gone["scores"]) == 0
    gone = run(d, image_labels=np.array([1, 2, 3]), width=100, height=100)
    assert len(gone["scores"]) == 0


def test_batch_keeps_the_most_reliable_fraction():
    # reliabilities 0.3, 0.8, 0.6, 0.8 (ties: the earlier image first), image 14: class 2 unfound
    scores = {10: [0.9, 0.3], 11: [0.8, 0.9], 12: [0.6, 0.7], 13: [0.95, 0.8], 14: [0.99]}
    per_image = {i: dets(s, [1, 2][: len(s)]) for i, s in scores.items()}
    ims = images(5)

    def kept(**params):
        out = denoise_images(per_image, ims, build_chain([dict(type="reliable_images", **params)]))
        assert all(len(out[i]["scores"]) in (0, len(scores[i])) for i in out)  # whole images
        return sorted(i for i in out if len(out[i]["scores"]))

    assert kept(fraction=0.2) == [11]  # one image: of the two at 0.8, the earlier
    assert kept(fraction=0.4) == [11, 13]  # ceil(0.4 x 5) = 2 images
    assert kept(fraction=0.5) == [11, 12, 13]  # ceil(2.5) = 3
    # everything that is reliable at all: the same images image_filter keeps (min_score 0)
    assert kept(fraction=1.0) == [10, 11, 12, 13]
    by_filter = denoise_images(per_image, ims, build_chain([dict(type="image_filter")]))
    assert kept(fraction=1.0) == sorted(i for i in by_filter if len(by_filter[i]["scores"]))
    assert kept(fraction=1.0, min_score=0.7) == [11, 13]


@pytest.mark.parametrize("fraction", [0.0, 1.5])
def test_fraction_must_be_a_share(fraction):
    with pytest.raises(ValueError, match="fraction"):
        STRATEGIES["reliable_images"](
            dets([0.9], [1]), image_labels=np.array([1]), width=1, height=1, fraction=fraction
        )

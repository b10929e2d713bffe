"""Import of foreign proposal files; each test writes its own small file of that format."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.io

from wsod.proposals.importers import ImportErrorWSOD, convert_layout, import_proposals

IMAGES = [
    {"id": 5, "file_name": "JPEGImages/000005.jpg", "width": 500, "height": 375},
    {"id": 7, "file_name": "JPEGImages/000007.jpg", "width": 500, "height": 333},
]


def _cell(arrs):
    c = np.empty((len(arrs), 1), dtype=object)  # MATLAB cells are column vectors here
    for i, a in enumerate(arrs):
        c[i, 0] = a
    return c


def test_convert_layout_classic_mat():
    # 1-based inclusive y1,x1,y2,x2 -> 0-based continuous x1,y1,x2,y2
    np.testing.assert_array_equal(convert_layout([[11, 21, 40, 60]], "yx1"), [[20, 10, 60, 40]])
    np.testing.assert_array_equal(convert_layout([[1, 2, 3, 4]], "xy"), [[1, 2, 3, 4]])


def test_import_classic_selective_search_mat(tmp_path):
    path = tmp_path / "voc_2007_trainval.mat"
    boxes = [
        np.array([[11, 21, 40, 60], [1, 1, 375, 500]], dtype=np.uint16),
        np.array([[5, 5, 100, 200]], dtype=np.uint16),
        np.array([[1, 1, 10, 10]], dtype=np.uint16),
    ]
    names = _cell([np.array(["000005"]), np.array(["000007"]), np.array(["009999"])])
    scipy.io.savemat(path, {"boxes": _cell(boxes), "images": names})
    props, rep = import_proposals(path, IMAGES)
    np.testing.assert_array_equal(
        props["JPEGImages/000005.jpg"][0], [[20, 10, 60, 40], [0, 0, 500, 375]]
    )
    np.testing.assert_array_equal(props["JPEGImages/000007.jpg"][0], [[4, 4, 200, 100]])
    assert props["JPEGImages/000005.jpg"][1] is None
    assert rep["unmatched_entries"] == ["009999"] and rep["missing_images"] == []
    # the same file read with the x1y1x2y2 flag takes the numbers as they are
    props_xy, _ = import_proposals(path, IMAGES, layout="xy")
    np.testing.assert_array_equal(props_xy["JPEGImages/000007.jpg"][0], [[5, 5, 100, 200]])


def test_import_mat_with_scores(tmp_path):
    path = tmp_path / "mcg.mat"
    scipy.io.savemat(
        path,
        {
            "boxes": _cell([np.array([[1, 1, 10, 20.0]])]),
            "images": _cell([np.array(["000007"])]),
            "scores": _cell([np.array([[0.7]])]),
        },
    )
    props, rep = import_proposals(path, IMAGES)
    np.testing.assert_allclose(props["JPEGImages/000007.jpg"][1], [0.7])
    assert rep["missing_images"] == ["JPEGImages/000005.jpg"]


@pytest.mark.parametrize("ids_key,ids", [("indexes", [5, 7]), ("ids", ["000005", "000007"])])
def test_import_pcl_wetectron_pickle(tmp_path, ids_key, ids):
    path = tmp_path / "ss.pkl"
    obj = {
        "boxes": [
            np.array([[1, 2, 30, 40]], np.float32),
            np.array([[0, 0, 50, 50], [5, 5, 9, 9]], np.float32),
        ],
        ids_key: ids,
        "scores": [np.array([0.5], np.float32), np.array([0.9, 0.1], np.float32)],
    }
    path.write_bytes(pickle.dumps(obj))
    with pytest.raises(ImportErrorWSOD, match=r"ss\.pkl.*--allow-pickle"):
        import_proposals(path, IMAGES)
    with pytest.warns(UserWarning, match="runs any code"):
        props, rep = import_proposals(path, IMAGES, allow_pickle=True)
    np.testing.assert_array_equal(props["JPEGImages/000005.jpg"][0], [[1, 2, 30, 40]])
    np.testing.assert_allclose(props["JPEGImages/000007.jpg"][1], [0.9, 0.1])
    assert rep["matched"] == 2 and rep["unmatched_entries"] == []


def test_import_mmdet_dict_and_list_pickles(tmp_path):
    d = tmp_path / "mmdet_dict.pkl"
    d.write_bytes(
        pickle.dumps(
            {
                "JPEGImages/000005.jpg": {
                    "bboxes": np.array([[1, 1, 9, 9]], np.float32),
                    "scores": np.array([0.3], np.float32),
                },
                "other/000007.jpg": np.array([[2, 2, 20, 20, 0.6]], np.float32),  # (N,5) with score
                "JPEGImages/123456.jpg": np.zeros((0, 4), np.float32),
            }
        )
    )
    with pytest.warns(UserWarning):
        props, rep = import_proposals(d, IMAGES, allow_pickle=True)
    np.testing.assert_allclose(props["JPEGImages/000007.jpg"][1], [0.6])
    np.testing.assert_array_equal(props["JPEGImages/000007.jpg"][0], [[2, 2, 20, 20]])
    assert rep["unmatched_entries"] == ["JPEGImages/123456.jpg"]
    lst = tmp_path / "mmdet_list.pkl"
    lst.write_bytes(pickle.dumps([np.array([[1, 1, 9, 9, 0.5]]), np.array([[3, 3, 30, 30]])]))
    with pytest.warns(UserWarning):
        props, _ = import_proposals(lst, IMAGES, allow_pickle=True)
    np.testing.assert_array_equal(props["JPEGImages/000007.jpg"][0], [[3, 3, 30, 30]])
    bad = tmp_path / "short_list.pkl"
    bad.write_bytes(pickle.dumps([np.zeros((1, 4))]))
    with pytest.warns(UserWarning), pytest.raises(ImportErrorWSOD, match="align"):
        import_proposals(bad, IMAGES, allow_pickle=True)


def test_import_errors_name_the_file(tmp_path):
    with pytest.raises(ImportErrorWSOD, match="nope.mat"):
        import_proposals(tmp_path / "nope.mat", IMAGES)
    txt = tmp_path / "boxes.txt"
    txt.write_text("1 2 3 4")
    with pytest.raises(ImportErrorWSOD, match=r"boxes\.txt.*\.mat"):
        import_proposals(txt, IMAGES)
    m = tmp_path / "bad.mat"
    scipy.io.savemat(m, {"rects": np.zeros((1, 4))})
    with pytest.raises(ImportErrorWSOD, match=r"bad\.mat.*'boxes' and 'images'"):
        import_proposals(m, IMAGES)

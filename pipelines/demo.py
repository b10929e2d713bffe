# The embedded default pipeline: the synthetic demo dataset (generated under data/demo), end to end
# on a CPU in minutes. `make demo` runs it; every value below is an option of `wsod <stage>`.
fsd = 0  # 1: also train the fully supervised reference (make FSD=1)
rounds = 0  # self-training rounds after the first strong detector (make ROUNDS=N)

data = dict(source='data/demo', format='demo', splits=['train', 'val'], seed=0)
proposals = dict(method='selective_search', mode='fast', max_boxes=500, workers=2)
# CAM black box (the demo's built-in black boxes compared:
# docs/experiments/2026-12-03-other-black-boxes.md#the-built-in-black-boxes-on-the-demo-dataset)
# precision='auto' (both trainings): bf16 autocast where the CPU computes bf16 natively, as in
# pipelines/voc07_cpu.py: docs/experiments/2026-12-06-bf16-autocast.md
weak = dict(config='configs/cam/cam_mobilenetv2_demo.py', seed=0, precision='auto')
denoise = dict(strategies=[dict(type='label_consistency'), dict(type='top1')])
strong = dict(config='configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py',
              seed=0, precision='auto')

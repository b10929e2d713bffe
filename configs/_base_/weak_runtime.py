# Runtime of the weak detectors: mmdet's defaults for an iteration-based loop (checkpoint every
# 500 steps = the resume point, keep 2; log every 20 steps).
_base_ = './default_runtime.py'
default_hooks = dict(
    checkpoint=dict(by_epoch=False, interval=500, max_keep_ckpts=2),
    logger=dict(interval=20))
log_processor = dict(by_epoch=False)

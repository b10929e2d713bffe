# Runtime of the strong detectors (and the fully supervised reference): iteration-based
# checkpoints and logs, and a NaN/inf loss stops training naming the losses.
_base_ = './default_runtime.py'

default_hooks = dict(
    # iteration-based: a checkpoint every 250 iterations (a few minutes on a CPU, so little is
    # lost to an interruption) and at the end, the last 2 kept
    checkpoint=dict(by_epoch=False, interval=250, max_keep_ckpts=2, save_last=True),
    logger=dict(interval=20))
log_processor = dict(window_size=20, by_epoch=False)

# stop on a NaN/inf loss naming the losses and the last good checkpoint
custom_hooks = [dict(type='WSODFiniteLossHook', interval=1)]

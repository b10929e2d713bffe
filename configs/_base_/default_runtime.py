# Shared runtime for every wsod training config (weak and strong stages).
# Custom modules (WSOD* detectors, heads, backbones, the weak-label dataset, the COCO-results
# dump metric) come in through custom_imports; mmdet's registries stay the default scope.
default_scope = 'mmdet'
custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset'], allow_failed_imports=False)

default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=20),  # small runs: log often
    param_scheduler=dict(type='ParamSchedulerHook'),
    # schedules override interval/by_epoch; max_keep_ckpts bounds disk use on long runs
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=3),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='DetVisualizationHook'))

# a NaN/inf loss stops training instead of silently wasting the run (checked every iteration)
custom_hooks = [dict(type='CheckInvalidLossHook', interval=1)]

env_cfg = dict(
    cudnn_benchmark=False,
    mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0),
    # multi-GPU: `python -m torch.distributed.run --nproc_per_node=GPUS -m wsod weak ...
    # --launcher pytorch` (mmengine launcher); the CPU path is what the tests run.
    dist_cfg=dict(backend='nccl'),
)

vis_backends = [dict(type='LocalVisBackend')]
visualizer = dict(type='DetLocalVisualizer', vis_backends=vis_backends, name='visualizer')
log_processor = dict(type='LogProcessor', window_size=20, by_epoch=True)

log_level = 'INFO'
load_from = None
resume = False

# The MobileNetV2 strong detector (cpu-4e-bg03) with its convolutions in channels_last
# (WSODChannelsLastHook): the same model and schedule, other CPU kernels. Measured for speed and
# not adopted: projects/channels_last/README.md.
_base_ = '../../../configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py'

custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'projects.channels_last.channels_last'],
    allow_failed_imports=False)
custom_hooks = [dict(type='WSODFiniteLossHook', interval=1), dict(type='WSODChannelsLastHook')]

# The demo pipeline with semi-supervised retraining (issue 30): pipelines/demo.py with the
# soft-teacher strong config of the same detector and schedule (every train image also
# unlabelled; the teacher's boxes restricted to each image's labels). Not the default.
#   make all PIPELINE=projects/soft_teacher/pipelines/demo_semi.py
_base_ = ['../../../pipelines/demo.py']

run_name = 'demo_semi'
strong = dict(
    config='projects/soft_teacher/configs/'
    'soft-teacher_faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py')
fsd_config = 'configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py'

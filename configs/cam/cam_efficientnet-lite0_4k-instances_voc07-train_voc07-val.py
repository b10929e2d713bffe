# The default black box (cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py: the Lite0
# CAM, then its learned affinity phase and the walk on it) with IRN's instance separation
# (issue 54): in the same phase from step 4,000 a second light head learns a displacement field
# toward instance centroids and a class-boundary map from the CAM's seeds (each connected seed
# region a pseudo instance; image labels only). At test time each class's walked region is cut
# into one mask per instance and each mask's box joins the proposals; a box scores against one
# instance's region, so a box around two instances loses to each one's own
# (docs/experiments/2026-12-07-instance-separation.md: on VOC below the affinity black box, not
# adopted).
# Configs inherit one level only (tests/test_config_layout.py): the affinity config's model and
# phase settings are repeated here, and tests/models/test_instance_branch.py checks that they
# stay equal to that config's.
_base_ = './cam_efficientnet-lite0_4k_voc07-train_voc07-val.py'

model = dict(
    backbone=dict(out_indices=(1, 2, 3, 4)),
    roi_head=dict(
        affinity=dict(in_indices=(0, 1, 2), in_channels=(24, 40, 112), stride=8, channels=64,
                      embed_channels=32, seed_hi=0.5, seed_lo=0.1,
                      dilations=(1, 2, 3, 4, 6, 8, 12)),
        refine=dict(type='learned', iters=20, dilations=(1, 2, 3, 4, 6, 8, 12), beta=8.0,
                    min_prob=0.05),
        # IRN's relations on the same frozen stages at 1/8 of the input: seeds at IRN's
        # confident thresholds (class >= 0.3 x its maximum, background < 0.05), boundary pairs
        # up to 8 map pixels = 64 input pixels apart
        instance=dict(in_indices=(0, 1, 2), in_channels=(24, 40, 112), stride=8, channels=64,
                      seed_hi=0.3, seed_lo=0.05, dilations=(1, 2, 3, 4, 6, 8)),
        # the walked region above 0.3 x its maximum (the affinity config's threshold) cut into
        # instances; groups under 1 % of the image dropped (IRN's fragment size); only the
        # classes the walk walks (probability >= its min_prob) are grouped, the others keep
        # their 'thresholded' scores (grouping costs per class)
        scoring=dict(_delete_=True, type='instances', thr=0.3, min_area=0.01, min_prob=0.05,
                     centroid_thr=10.0, iters=100, boundary_thr=0.5)))
custom_hooks = [dict(type='CheckInvalidLossHook', interval=1),
                dict(type='WSODAffinityPhaseHook', start_iter=4000)]
train_cfg = dict(max_iters=5000)
# the affinity branch learns at 100x the base lr (0.1 after the lr step), as the affinity
# config's; the instance branch at 10x: at 100x it collapsed to a constant output (its boundary
# loss stuck at ln 2, even on 16 images), at 10x it learns
# (docs/experiments/2026-12-07-instance-separation.md, section of 2026-12-07 night)
optim_wrapper = dict(paramwise_cfg=dict(custom_keys={'roi_head.affinity': dict(lr_mult=100.0),
                                                     'roi_head.instance': dict(lr_mult=10.0)}))

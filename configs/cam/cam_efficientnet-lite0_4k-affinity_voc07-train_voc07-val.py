# The EfficientNet-Lite0 CAM black box (cam_efficientnet-lite0_4k_voc07-train_voc07-val.py,
# unchanged for its first 4,000 steps) followed by IRN's second step in the same run: from
# step 4,000 on, the classifier is frozen and a light affinity branch learns which neighbouring
# pixels belong together from the classifier's own seeds (confident class pixels, confident
# background; image labels only). At test time the CAMs are refined by a random walk on those
# learned affinities before proposals are scored (issue 31;
# docs/experiments/2026-12-05-learned-affinity.md).
_base_ = './cam_efficientnet-lite0_4k_voc07-train_voc07-val.py'

model = dict(
    # the frozen ImageNet stages at strides 4, 8 and 16 feed the branch; the last output is the
    # classifier's input as before
    backbone=dict(out_indices=(1, 2, 3, 4)),
    roi_head=dict(
        # AffinityNet / IRN training signal on the walk's neighbourhood at 1/8 of the input
        # (AffinityNet's resolution; at 1/4 one training step cost 5x more), reaching 12 map
        # pixels = 96 input pixels: pairs of seeded pixels, same seed = 1, different = 0;
        # pixels between seed_lo and seed_hi x the class maximum are unused
        affinity=dict(in_indices=(0, 1, 2), in_channels=(24, 40, 112), stride=8, channels=64,
                      embed_channels=32, seed_hi=0.5, seed_lo=0.1,
                      dilations=(1, 2, 3, 4, 6, 8, 12)),
        # walk on the learned affinities (a ** beta, normalised per pixel) for the classes of
        # probability >= 0.05 (the others cost as much and score little), then score a box by
        # how exactly it holds the walked map's region above 0.3 x its maximum. Chosen on the
        # first half of val (626 images) with the 1,500-step checkpoint among 10-40 steps,
        # beta 4 / 8 and thresholds 0.2-0.4 (the walk without the threshold score, and the
        # threshold score without the walk, gain little there); see the experiment
        scoring=dict(_delete_=True, type='thresholded', thr=0.3),
        refine=dict(type='learned', iters=20, dilations=(1, 2, 3, 4, 6, 8, 12), beta=8.0,
                    min_prob=0.05)))
# the runtime's CheckInvalidLossHook, then the phase switch (a list replaces the base's)
custom_hooks = [dict(type='CheckInvalidLossHook', interval=1),
                dict(type='WSODAffinityPhaseHook', start_iter=4000)]
train_cfg = dict(max_iters=5000)
# after the classifier's lr step at 3,000 the base lr is 1e-3: the new branch learns at 100x
# (0.1, AffinityNet's lr for its new layers); the longest matching key wins in mmengine
optim_wrapper = dict(paramwise_cfg=dict(custom_keys={'roi_head.affinity': dict(lr_mult=100.0)}))

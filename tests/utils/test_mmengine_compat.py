"""A 1-iteration mmengine run resumes under torch's weights_only loading (torch >= 2.6)."""

import torch
import torch.nn as nn
from mmengine.model import BaseModel
from mmengine.runner import Runner
from torch.utils.data import Dataset

from wsod.utils.mmengine_compat import enable_safe_resume, mmengine_safe_globals


class _Data(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"x": torch.randn(3, generator=g), "y": torch.randn(1, generator=g)}


class _Model(BaseModel):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def forward(self, x, y, mode="loss"):
        return {"loss": ((self.lin(x) - y) ** 2).mean()}


def _runner(work_dir, max_iters, resume):
    return Runner(
        model=_Model(),
        work_dir=str(work_dir),
        experiment_name=f"it{max_iters}",
        train_dataloader=dict(
            dataset=_Data(),
            sampler=dict(type="DefaultSampler", shuffle=True),
            batch_size=2,
            collate_fn=dict(type="default_collate"),
        ),
        optim_wrapper=dict(optimizer=dict(type="SGD", lr=0.01)),
        param_scheduler=dict(type="MultiStepLR", milestones=[1], by_epoch=False),
        train_cfg=dict(by_epoch=False, max_iters=max_iters),
        default_hooks=dict(checkpoint=dict(type="CheckpointHook", interval=1, by_epoch=False)),
        resume=resume,
        randomness=dict(seed=0),
    )


def test_checkpoint_needs_exactly_the_allow_list(tmp_path):
    _runner(tmp_path, 1, False).train()
    # other tests may already have allow-listed them: look with torch's defaults only
    saved = torch.serialization.get_safe_globals()
    torch.serialization.clear_safe_globals()
    try:
        unsafe = set(
            torch.serialization.get_unsafe_globals_in_checkpoint(str(tmp_path / "iter_1.pth"))
        )
    finally:
        torch.serialization.add_safe_globals(saved)
    allowed = {f"{g.__module__}.{g.__qualname__}" for g in mmengine_safe_globals()}
    assert unsafe, "mmengine checkpoints are expected to hold non-tensor globals"
    assert unsafe <= allowed, f"not allow-listed: {unsafe - allowed}"


def test_one_iteration_run_resumes(tmp_path):
    enable_safe_resume()
    _runner(tmp_path, 1, False).train()
    resumed = _runner(tmp_path, 2, True)
    resumed.train()
    assert resumed.iter == 2
    logs = list(tmp_path.glob("it2/*.log")) or list(tmp_path.glob("*/*.log"))
    assert any("resumed epoch: 0, iter: 1" in p.read_text() for p in logs)

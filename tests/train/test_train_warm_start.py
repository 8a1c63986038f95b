"""Partial warm start from a pre-trained checkpoint or an exported safetensors file."""

from __future__ import annotations

from pathlib import Path

import safetensors.torch
import torch
from train_helpers import make_toy, run_until

from homalign.train.supervisor import Supervisor
from homalign.train.toy import ToyRegression
from homalign.train.warm_start import warm_start, warm_start_fn


def _pretrained(logdir: Path) -> dict[str, torch.Tensor]:
    toy = make_toy(dropout=0.0)  # net.0 (4 -> 8), net.2 (8 -> 1)
    run_until(toy.supervisor(logdir), toy, 5)
    return toy.params()


def test_partial_warm_start_restores_only_named_parameters(tmp_path: Path) -> None:
    pre = _pretrained(tmp_path / "pre")
    torch.manual_seed(42)
    model = ToyRegression(in_features=4, hidden=8, layers=2)  # net.0, net.2 (8x8), net.4 (head)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sv = Supervisor(tmp_path / "new", model=model, optimizer=opt, save_model_secs=0,
                    save_summaries_secs=0,
                    init_fn=warm_start_fn(tmp_path / "pre", include=["net.0.*", "net.2.*"]))
    with sv.managed_session():
        report = sv.prepared.init_result  # type: ignore[union-attr]
        after = model.state_dict()
        assert report.restored == ["net.0.weight", "net.0.bias"]
        assert torch.equal(after["net.0.weight"], pre["net.0.weight"])
        assert not torch.equal(before["net.0.weight"], pre["net.0.weight"])
        assert report.skipped["net.2.weight"] == "shape (1, 8) in checkpoint, (8, 8) in model"
        assert report.skipped["net.2.bias"].startswith("shape (1,)")
        assert report.skipped["net.4.weight"] == "not selected"
        for name in ("net.2.weight", "net.4.weight", "net.4.bias"):
            assert torch.equal(after[name], before[name]), f"{name} must not change"
    # the run is now recovered from its own checkpoint: no second warm start
    model2 = ToyRegression(in_features=4, hidden=8, layers=2)
    sv2 = Supervisor(tmp_path / "new", model=model2, optimizer=torch.optim.SGD(model2.parameters(), 0.1),
                     save_model_secs=0, save_summaries_secs=0,
                     init_fn=warm_start_fn(tmp_path / "pre"))
    with sv2.managed_session():
        assert sv2.prepared.init_result is None and sv2.restored_from is not None  # type: ignore[union-attr]


def test_warm_start_from_export_with_rename_and_exclude(tmp_path: Path) -> None:
    src = ToyRegression(in_features=4, hidden=8)
    path = tmp_path / "export.safetensors"
    safetensors.torch.save_file({f"encoder.{k}": v.contiguous() for k, v in src.state_dict().items()},
                                str(path))
    dst = ToyRegression(in_features=4, hidden=8)
    report = warm_start(dst, path, exclude=["net.2.bias"], rename=lambda n: f"encoder.{n}")
    assert report.restored == ["net.0.weight", "net.0.bias", "net.2.weight"]
    assert report.skipped == {"net.2.bias": "not selected"}
    assert torch.equal(dst.net[2].weight, src.net[2].weight)
    report = warm_start(ToyRegression(4, 8), path)
    assert set(report.skipped) == set(ToyRegression(4, 8).state_dict())
    assert all(why.startswith("not in checkpoint") for why in report.skipped.values())

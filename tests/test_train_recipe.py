"""The shipped-weights recipe end to end on a tiny config, through the real code: `homalign
train` a stage from scratch, warm-start a fine-tune from its export with weight averaging, join
an ensemble, load the result as the bundled weights ($HOMALIGN_WEIGHTS) and align with it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

from homalign.cli import main as cli_main
from homalign.errors import InputError
from homalign.evaluate import bundled_homstrad_dev
from homalign.train.config import load_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
SCRIPT = ROOT / "scripts" / "train_weights.sh"
# ghf2 and DAP_epimerase fall in the 10% held-out side of split_by_group, ALAD and utg train
FAMILIES = ("ALAD", "utg", "ghf2", "DAP_epimerase")


def _tiny(data: Path) -> list[str]:
    """The --set overrides that shrink a recipe stage (as scripts/train_weights.sh --tiny)."""
    return [f'model_args.homstrad="{data}"', 'model_args.tmalign=""', "model_args.window=64",
            "model_args.val_fraction=0.1", "model_args.eval_pairs=2",
            "model_args.config.dim=8", "model_args.config.dilations=[1]", "train.steps=4",
            "model_args.max_cells=8192", "train.save_model_steps=2", "train.log_every_steps=0",
            "train.save_summaries_secs=0.0", "eval.throttle_secs=0.05"]


def _stage_names() -> list[tuple[str, str, str]]:
    """(logdir name, config, product) of every `stage` line of scripts/train_weights.sh."""
    text = SCRIPT.read_text()
    return re.findall(r"^stage (\S+)\s+(\S+)\s+(\S+)", text, flags=re.M)


def test_every_recipe_stage_is_a_config_selected_on_held_out_train_pairs() -> None:
    stages = _stage_names()
    assert [s[0] for s in stages] == ["learned-more2", "learned-mg2", "learned-mg4",
                                      "learned-tw2", "mgs3", "more2", "mg2", "mg4", "tw2",
                                      "tmpl1", "homad4"]
    for name, config, product in stages:
        c = load_config(CONFIGS / f"{config}.toml")
        assert c.eval is not None and c.model_args.get("eval_data", "held-out") == "held-out"
        if product != "best":  # the product is an [average] export of that name
            assert c.average is not None and c.average.name == product
        # every config's warm start names the export of a stage run before it
        if c.warm_start is not None:
            assert c.warm_start.source.startswith("runs/recipe/")
        # learned's stages: the loop's batches, schedule and start (init), seeded alike
        if name.startswith("learned-") or name == "mgs3":
            assert c.model_args["batching"] == "epochs" and c.warm_start is None
            assert c.model_args["data_seed"] == c.seed and c.train.scheduler == "cosine-closed"
            if name != "learned-more2" and name != "mgs3":
                assert c.model_args["init"].startswith("runs/recipe/learned-")


def test_tiny_recipe_trains_warm_starts_averages_joins_loads_and_aligns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "families"
    for fam in FAMILIES:
        shutil.copytree(bundled_homstrad_dev() / fam, data / fam)
    runs = tmp_path / "runs"
    tiny = [x for s in _tiny(data) for x in ("--set", s)]

    # stage 1 from scratch: export/best by held-out F1
    base = ["train", "--config", str(CONFIGS / "more2.toml"), "--logdir", str(runs / "more2")]
    assert cli_main([*base, *tiny]) == 0
    best = runs / "more2" / "export" / "best"
    meta = json.loads(best.with_suffix(".json").read_text())
    assert meta["eval_metric"] == "f1" and meta["eval"]["pairs"] == 2.0
    assert meta["run"]["config_file"].endswith("more2.toml") and meta["run"]["set"]

    # stage 2: warm start from stage 1's export, marginal loss, the mean of steps 2 and 4
    fine = ["train", "--config", str(CONFIGS / "mgswa1.toml"), "--logdir", str(runs / "mg2"),
            *tiny, "--set", f'warm_start.source="{best}.safetensors"', "--set",
            "average.steps=[2, 4]"]
    capsys.readouterr()
    assert cli_main(fine) == 0
    out = capsys.readouterr().out
    assert f"warm start from {best}.safetensors: restored" in out
    avg = runs / "mg2" / "export" / "average"
    avg_meta = json.loads(avg.with_suffix(".json").read_text())
    assert avg_meta["averaged_steps"] == [2, 4] and avg_meta["eval"]["f1"] > 0
    assert avg_meta["run"]["warm_start"] == f"{best}.safetensors"
    snaps = [safetensors.torch.load_file(runs / "mg2" / "average" / f"model-{k:08d}.safetensors")
             for k in (2, 4)]
    got = safetensors.torch.load_file(avg.with_suffix(".safetensors"))
    W = "scorer.W"
    torch.testing.assert_close(got[W], (snaps[0][W].double() + snaps[1][W].double()).div(2)
                               .float())
    start = safetensors.torch.load_file(best.with_suffix(".safetensors"))
    assert not torch.equal(got[W], start[W])  # it trained on from the warm start

    # rerunning a finished stage resumes at its last step and trains nothing
    capsys.readouterr()
    assert cli_main(fine) == 0
    assert "restored from model.ckpt-4" in capsys.readouterr().out

    # the ensemble join, then the joined weights as the bundled `learned`
    weights = tmp_path / "weights"
    weights.mkdir()
    from homalign.model.ensemble import main as join

    assert join([str(weights / "learned"), str(avg), str(best)]) == 0
    monkeypatch.setenv("HOMALIGN_WEIGHTS", str(weights))
    from homalign.model.weights import load_bundled, load_model

    model, bundled_meta = load_bundled("learned")
    assert len(bundled_meta["ensemble"]["members"]) == 2
    own, _ = load_model(weights / "learned")
    import homalign
    from homalign.evaluate import load_reference_pairs
    from homalign.model.decode import mea_align, posterior_matrix

    ref = next(r for r in load_reference_pairs(data) if r.family == "ghf2")
    aln = homalign.align(ref.query, ref.target, method="learned")
    S, gaps = own.score_pair(ref.query.codes, ref.target.codes)
    expect = mea_align(posterior_matrix(S, gaps, own.cfg.decode_mode), own.cfg.mea_threshold)
    np.testing.assert_array_equal(aln.pairs, expect.pairs)
    # without the variable the package's own weights come back
    monkeypatch.delenv("HOMALIGN_WEIGHTS")
    assert (load_bundled("learned")[1]["ensemble"]["members"][0]["stem"]
            == "runs/recipe/learned-tw2/export/average")


def test_a_warm_start_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    from homalign.train.launch import train_from_config

    data = tmp_path / "families"
    for fam in FAMILIES:
        shutil.copytree(bundled_homstrad_dev() / fam, data / fam)
    other = tmp_path / "other.safetensors"
    safetensors.torch.save_file({"scorer.W": torch.zeros(3, 3)}, str(other))
    config = load_config(CONFIGS / "mgswa1.toml",
                         [*_tiny(data), f'warm_start.source="{other}"'])
    with pytest.raises(InputError, match="does not fit the model"):
        train_from_config(config, tmp_path / "run", echo=None)
    # data too small for one batch: an error, not a loop waiting forever
    config = load_config(CONFIGS / "more2.toml", [*_tiny(data), "train.batch_size=50"])
    with pytest.raises(InputError, match="make no batch"):
        train_from_config(config, tmp_path / "run2", echo=None)


def test_the_recipe_script_parses_and_documents_tiny_mode() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    help_text = subprocess.run(["bash", str(SCRIPT), "--help"], check=True, capture_output=True,
                               text=True).stdout
    assert "--tiny" in help_text and "Resumable" in help_text


def test_set_overrides_and_the_recipe_tables_are_checked() -> None:
    from homalign.train.config import apply_overrides, parse_config

    data = {"model": "toy-regression", "train": {"steps": 5}}
    out = apply_overrides(data, ["train.steps=7", "train.lr=1e-3", "model_args.hidden=4",
                                 'warm_start.source="a b.safetensors"', "average.steps=[2, 4]",
                                 "model_args.name=plain words"])
    assert out["train"] == {"steps": 7, "lr": 1e-3} and data["train"] == {"steps": 5}
    assert out["model_args"] == {"hidden": 4, "name": "plain words"}
    c = parse_config(out)
    assert c.warm_start is not None and c.warm_start.source == "a b.safetensors"
    assert c.average is not None and c.average.steps == [2, 4] and c.average.name == "average"
    with pytest.raises(InputError, match="KEY=VALUE"):
        apply_overrides(data, ["train.steps"])
    with pytest.raises(InputError, match="not a table"):
        apply_overrides(data, ["train.steps.x=1"])
    for bad in ({"average": {"steps": []}}, {"average": {"steps": [2, 2]}},
                {"average": {"steps": [0]}}, {"warm_start": {"include": ["*"]}},
                {"warm_start": {"source": "x", "include": "*"}},
                {"train": {"clip_grad_norm": "1"}}):
        with pytest.raises(InputError):
            parse_config({"model": "toy-regression", **bad})


def test_cell_budget_buckets_hold_every_pair_once_and_collate_to_the_training_loss() -> None:
    from homalign.model.aligner import AlignerModel
    from homalign.model.config import AlignerConfig
    from homalign.model.data import load_homstrad
    from homalign.model.task import (
        BucketedPairs,
        PairDataset,
        aligner_loss,
        collate_buckets,
    )

    pairs = load_homstrad(bundled_homstrad_dev(), 2)[:24]
    data = BucketedPairs(pairs, window=64, max_cells=3 * 64 * 64)
    seen = sorted(k for g in data.groups for k in g)
    assert seen == list(range(len(pairs))) and len(data) >= 4
    for g in range(len(data)):
        q = data[g][0]
        assert q.shape[0] * q.shape[1] ** 2 <= 3 * 64 * 64 or q.shape[0] == 1
    # two buckets joined give the loss of the same pairs as single padded items
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), dropout=0.0))
    joined = collate_buckets([data[0], data[1]])
    singles = PairDataset(pairs, window=64)
    from torch.utils.data import default_collate

    ref = default_collate([singles[k] for k in data.groups[0] + data.groups[1]])
    got = float(aligner_loss(model, joined, aux_weight=0.2).detach())
    assert got == pytest.approx(float(aligner_loss(model, list(ref), aux_weight=0.2).detach()), rel=1e-5)


def test_buckets_crop_long_pairs_anew_every_epoch_within_the_cell_budget() -> None:
    from homalign.model.data import load_homstrad
    from homalign.model.task import BucketedPairs, collate_buckets
    from homalign.train.data import ResumableLoader

    pairs = load_homstrad(bundled_homstrad_dev(), 2)[:24]
    long = [k for k, p in enumerate(pairs) if max(len(p.q), len(p.t)) > 64]
    assert long
    data = BucketedPairs(pairs, window=64, max_cells=3 * 64 * 64)
    crops = []
    for epoch in (0, 1, 1):
        data.set_epoch(epoch)
        crops.append([(len(c.q), int(c.pairs[0, 0])) for c in map(data.cropped, long)])
        for g in range(len(data)):
            q, t = data[g][0], data[g][1]
            assert q.shape[1] <= 64 and t.shape[1] <= 64
            assert q.shape[0] * max(q.shape[1], t.shape[1]) ** 2 <= 3 * 64 * 64
    assert crops[0] != crops[1] and crops[1] == crops[2]  # new each epoch, the same on resume
    buckets = []
    for epoch in (0, 1, 1, 2):
        data.set_epoch(epoch)
        buckets.append([sorted(g) for g in data.groups])
    assert len({len(b) for b in buckets}) == 1  # the sizes fix how many buckets there are
    assert all(sorted(k for g in b for k in g) == list(range(len(pairs))) for b in buckets)
    assert buckets[1] == buckets[2] and buckets[0] != buckets[1] != buckets[3]  # mixed anew
    loader = ResumableLoader(data, batch_size=1, collate_fn=collate_buckets, max_epochs=3)
    for _ in loader:
        pass
    assert data.epoch == 2  # the loader told the dataset each epoch


def test_epoch_batches_are_the_training_loops_batches() -> None:
    from homalign.model.data import batches, load_homstrad
    from homalign.model.task import EpochBatches, collate_buckets, tensor_batch

    pairs = load_homstrad(bundled_homstrad_dev(), 2)[:24]
    data = EpochBatches(pairs, window=64, max_cells=3 * 64 * 64, seed=5)
    orders = []
    for epoch in (0, 1, 0):
        data.set_epoch(epoch)
        ref = list(batches(pairs, 64, 3 * 64 * 64, np.random.default_rng([5, epoch])))
        assert len(data) == len(ref) >= 4
        for g, want in enumerate(ref):
            got = tensor_batch(collate_buckets([data[g]]))
            for name in ("q", "t", "lq", "lt", "q_ss", "t_ss", "q_acc", "t_acc"):
                assert torch.equal(getattr(got, name), getattr(want, name)), name
            assert all(np.array_equal(a, b) for a, b in zip(got.pairs, want.pairs, strict=True))
        assert sorted(k for g in data.groups for k in g) == list(range(len(pairs)))
        orders.append(data.groups)
    assert orders[0] == orders[2] and orders[0] != orders[1]


def test_a_stage_with_init_and_epoch_batches_trains_as_the_plain_loop(tmp_path: Path) -> None:
    """The runtime with model_args.init, batching = "epochs" and cosine-closed gives the weights,
    bit for bit, of the plain loop that made the shipped `learned` (written out here)."""
    import math

    from homalign.model.aligner import AlignerModel
    from homalign.model.config import AlignerConfig
    from homalign.model.data import batches, load_homstrad, split_by_group
    from homalign.model.task import batch_loss
    from homalign.model.weights import load_model, save_model
    from homalign.train.launch import train_from_config

    data = tmp_path / "families"
    for fam in FAMILIES:
        shutil.copytree(bundled_homstrad_dev() / fam, data / fam)
    torch.manual_seed(9)
    source = AlignerModel(AlignerConfig(dim=8, dilations=(1,), mode="semiglobal",
                                        decode_mode="semiglobal"))
    with torch.no_grad():
        source.scorer.W.normal_()
    save_model(source, tmp_path / "source", {})
    steps = 7
    config = load_config(CONFIGS / "learned-mgswa1.toml",
                         [*_tiny(data), f'model_args.init="{tmp_path / "source"}"',
                          f"train.steps={steps}", f"average.steps=[{steps}]",
                          "model_args.max_cells=16384"])
    assert config.train.scheduler == "cosine-closed" and config.seed == 2
    assert config.model_args["batching"] == "epochs" and config.model_args["data_seed"] == 2
    train_from_config(config, tmp_path / "run", echo=None)
    got = safetensors.torch.load_file(tmp_path / "run" / "export" / "average.safetensors")

    # the loop: seed, build, build from the source's config and take its weights, then train
    torch.manual_seed(2)
    stage_cfg = dict(config.model_args["config"])
    model = AlignerModel(AlignerConfig.from_dict(stage_cfg))
    src, meta = load_model(tmp_path / "source")
    model = AlignerModel(AlignerConfig.from_dict({**meta["config"], **stage_cfg}))
    model.load_state_dict(src.state_dict())
    train, _ = split_by_group(load_homstrad(data, 400), 0.1)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2],
                              "weight_decay": 0.05},
                             {"params": [p for p in params if p.dim() < 2],
                              "weight_decay": 0.0}], lr=1e-3)
    model.train()
    step, epoch = 0, 0
    while step < steps:
        for batch in batches(train, 64, 16384, np.random.default_rng([2, epoch])):
            for group in opt.param_groups:
                group["lr"] = 1e-3 * 0.5 * (1 + math.cos(math.pi * step / steps))
            loss, _ = batch_loss(model, batch, 0.2, marginal_weight=1.0)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if step == steps:
                break
        epoch += 1
    assert epoch >= 2  # the run crossed an epoch boundary
    want = model.state_dict()
    assert set(got) == set(want)
    for name, tensor in want.items():
        assert torch.equal(got[name], tensor), name
    assert not torch.equal(got["scorer.W"], source.state_dict()["scorer.W"])


def test_init_refuses_an_ensemble_and_unknown_batching(tmp_path: Path) -> None:
    from homalign.model.task import make_aligner_task

    with pytest.raises(InputError, match="batching"):
        make_aligner_task(homstrad=str(bundled_homstrad_dev()), tmalign=None, batching="x",
                          max_cells=8192)
    with pytest.raises(InputError, match="ensemble"):
        make_aligner_task(homstrad=str(bundled_homstrad_dev()), tmalign=None,
                          init=str(ROOT / "src" / "homalign" / "weights" / "learned"))

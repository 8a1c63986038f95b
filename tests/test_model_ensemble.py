"""Ensembles of learned aligners (homalign.model.ensemble): mean scores, save/load, errors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from homalign.model import AlignerConfig, AlignerModel, load_model, save_model
from homalign.model.aligner import EnsembleAligner
from homalign.model.decode import mea_align, posterior_matrix
from homalign.model.ensemble import join_models, main

GAP_FIELDS = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
              "t_del_open", "t_del_ext", "q_del_open", "q_del_ext")


def _members(tmp_path, dims=(8, 6)) -> list:
    stems = []
    for seed, dim in enumerate(dims):
        torch.manual_seed(seed)
        m = AlignerModel(AlignerConfig(dim=dim, dilations=(1, 2)))
        with torch.no_grad():
            for p in m.parameters():
                p.add_(0.3 * torch.randn_like(p))
        m.eval()
        save_model(m, tmp_path / f"m{seed}")
        stems.append(tmp_path / f"m{seed}")
    return stems


def _codes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, n).astype(np.int8)


def test_ensemble_scores_are_the_members_mean_scores_and_gap_costs(tmp_path) -> None:
    stems = _members(tmp_path, dims=(8, 6, 8))
    members = [load_model(s)[0] for s in stems]
    ens = EnsembleAligner(members)
    q, t = _codes(23, 1), _codes(31, 2)
    S, gaps = ens.score_pair(q, t)
    outs = [m.score_pair(q, t) for m in members]
    np.testing.assert_allclose(S, np.mean([s for s, _ in outs], axis=0), rtol=1e-6, atol=1e-6)
    for name in GAP_FIELDS:
        np.testing.assert_allclose(getattr(gaps, name),
                                   np.mean([getattr(g, name) for _, g in outs], axis=0),
                                   rtol=1e-6, atol=1e-6)
    # the members differ, so the mean is not any one of them
    assert not np.allclose(S, outs[0][0], atol=1e-3)
    assert ens.embed(q).shape == (1, 23, 8 + 6 + 8)


def test_joined_ensemble_round_trips_through_safetensors(tmp_path) -> None:
    stems = _members(tmp_path)
    assert main([str(tmp_path / "ens"), *map(str, stems)]) == 0
    loaded, meta = load_model(tmp_path / "ens")
    assert isinstance(loaded, EnsembleAligner)
    assert [m["stem"] for m in meta["ensemble"]["members"]] == [str(s) for s in stems]
    direct, _ = join_models(stems)
    q, t = _codes(40, 3), _codes(35, 4)
    for a, b in zip(loaded.score_pair(q, t), direct.score_pair(q, t), strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            for name in GAP_FIELDS:
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    S, gaps = loaded.score_pair(q, t)
    P = posterior_matrix(S, gaps, "semiglobal")
    pairs = mea_align(P, loaded.cfg.mea_threshold).pairs
    S2, gaps2 = direct.score_pair(q, t)
    np.testing.assert_array_equal(
        pairs, mea_align(posterior_matrix(S2, gaps2, "semiglobal"), 0.3).pairs)


def test_ensemble_refuses_members_that_decode_differently_and_nested_ensembles(tmp_path) -> None:
    stems = _members(tmp_path)
    other = AlignerModel(AlignerConfig(dim=8, dilations=(1,), mea_threshold=0.5))
    with pytest.raises(ValueError, match="member 1 has mea_threshold=0.5"):
        EnsembleAligner([load_model(stems[0])[0], other])
    with pytest.raises(ValueError, match="at least two members"):
        EnsembleAligner([other])
    main([str(tmp_path / "ens"), *map(str, stems)])
    with pytest.raises(ValueError, match="already an ensemble"):
        join_models([tmp_path / "ens", stems[0]])


def test_ensemble_weights_missing_a_member_are_refused(tmp_path) -> None:
    stems = _members(tmp_path)
    main([str(tmp_path / "ens"), *map(str, stems)])
    meta = json.loads((tmp_path / "ens.json").read_text())
    meta["ensemble"]["members"].append(meta["ensemble"]["members"][0])  # a third, absent member
    (tmp_path / "ens.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="no tensors for ensemble member 2"):
        load_model(tmp_path / "ens")
    meta["ensemble"]["members"] = meta["ensemble"]["members"][:1]  # one member, two stored
    (tmp_path / "ens.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="do not fit the 1-member ensemble"):
        load_model(tmp_path / "ens")


def test_training_refuses_an_ensemble_as_warm_start_or_teacher(tmp_path) -> None:
    from homalign.errors import InputError
    from homalign.evaluate import bundled_homstrad_dev
    from homalign.model.task import make_aligner_task
    from homalign.train.config import parse_config
    from homalign.train.launch import train_from_config

    stems = _members(tmp_path)
    main([str(tmp_path / "ens"), *map(str, stems)])
    data = tmp_path / "families"
    shutil.copytree(bundled_homstrad_dev() / "ALAD", data / "ALAD")
    args = {"homstrad": str(data), "tmalign": "", "window": 64, "val_fraction": 0.0,
            "config": {"dim": 8, "dilations": [1]}}
    with pytest.raises(InputError, match="is an ensemble"):
        make_aligner_task(**args, teacher=str(tmp_path / "ens"))
    # an ensemble's tensors are its members' (members.k.*): nothing fits a single model
    config = parse_config({"model": "homalign.model.task:learned-aligner", "model_args": args,
                           "train": {"steps": 1, "batch_size": 1},
                           "warm_start": {"source": str(tmp_path / "ens.safetensors")}})
    with pytest.raises(InputError, match="does not fit the model"):
        train_from_config(config, tmp_path / "run", echo=None)


def test_ensemble_forward_is_the_members_mean_on_a_padded_batch(tmp_path) -> None:
    from homalign.model.encoder import PAD

    members = [load_model(s)[0] for s in _members(tmp_path)]
    ens = EnsembleAligner(members)
    q = torch.as_tensor(np.stack([_codes(12, 5), np.r_[_codes(9, 6), [PAD] * 3]]).astype(np.int64))
    t = torch.as_tensor(np.stack([_codes(10, 7), _codes(10, 8)]).astype(np.int64))
    with torch.no_grad():
        S, gaps, e_q, e_t = ens(q, t)
        outs = [m(q, t) for m in members]
    torch.testing.assert_close(S, (outs[0][0] + outs[1][0]) / 2)
    torch.testing.assert_close(gaps.t_del_open, (outs[0][1].t_del_open + outs[1][1].t_del_open) / 2)
    assert e_q.shape == (2, 12, 8 + 6) and e_t.shape == (2, 10, 8 + 6)
    # the batched forward and the single-pair inference path agree
    S1, g1 = ens.score_pair(q[0].numpy().astype(np.int8), t[0].numpy().astype(np.int8))
    np.testing.assert_allclose(S1, S[0].numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g1.q_ins_open, gaps.q_ins_open[0].numpy(), rtol=1e-5, atol=1e-5)


def test_fused_and_member_by_member_scoring_agree(tmp_path) -> None:
    members = [load_model(s)[0] for s in _members(tmp_path)]
    ens = EnsembleAligner(members)
    assert ens._fused
    q, t = _codes(17, 9), _codes(21, 10)
    S, gaps = ens.score_pair(q, t)
    ens._fused = False
    S2, gaps2 = ens.score_pair(q, t)
    np.testing.assert_allclose(S, S2, rtol=1e-5, atol=1e-5)
    for name in GAP_FIELDS:
        np.testing.assert_allclose(getattr(gaps, name), getattr(gaps2, name), rtol=1e-6)
    # a member with a pair refiner is scored member by member, still the mean
    torch.manual_seed(3)
    refined = AlignerModel(AlignerConfig(dim=8, dilations=(1,), pair_channels=2)).eval()
    with torch.no_grad():
        refined.scorer.refine.out.weight.add_(0.1)
    mixed = EnsembleAligner([members[0], refined])
    assert not mixed._fused
    S3, _ = mixed.score_pair(q, t)
    np.testing.assert_allclose(
        S3, (members[0].score_pair(q, t)[0] + refined.score_pair(q, t)[0]) / 2, rtol=1e-5,
        atol=1e-5)

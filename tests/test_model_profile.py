"""Learned query profiles: the profile's scores are the members' average, and no member is a no-op."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from homalign.model.aligner import AlignerModel
from homalign.model.config import AlignerConfig
from homalign.model.query_profile import PROFILE_COLUMNS, ProfileMember, build_profile


def _model(seed: int = 0) -> AlignerModel:
    torch.manual_seed(seed)
    model = AlignerModel(AlignerConfig())
    with torch.no_grad():  # a trained-looking bilinear term, so embeddings matter
        model.scorer.W.normal_(0.0, 0.3)
    return model.eval()


def _seq(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, n).astype(np.uint8)


def test_profile_without_members_scores_like_the_query() -> None:
    model = _model()
    q, t = _seq(30, 1), _seq(25, 2)
    e_q, e_t = model.embed(q), model.embed(t)
    prof = build_profile(q, e_q, [])
    assert prof.n_members == 0 and prof.residues.shape == (30, PROFILE_COLUMNS)
    np.testing.assert_array_equal(prof.residues.argmax(1), q)
    S0, g0 = model.score_embedded(q, e_q, t, e_t)
    S1, g1 = model.score_embedded(q, prof.embedding, t, e_t, prof.residues)
    np.testing.assert_allclose(S1, S0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g1.q_ins_open, g0.q_ins_open, rtol=1e-6)


def test_profile_scores_are_the_average_of_the_members_scores() -> None:
    model = _model(1)
    q, m, t = _seq(30, 3), _seq(40, 4), _seq(20, 5)
    e_q, e_m, e_t = model.embed(q), model.embed(m), model.embed(t)
    pairs = np.array([[i, i + 5] for i in range(10, 25)], dtype=np.int32)  # columns 10..24
    prof = build_profile(q, e_q, [ProfileMember(m, e_m, pairs)], query_weight=0.5)
    S_prof, _ = model.score_embedded(q, prof.embedding, t, e_t, prof.residues)
    S_q, _ = model.score_embedded(q, e_q, t, e_t)
    S_m, _ = model.score_embedded(m, e_m, t, e_t)
    expected = S_q.copy()
    expected[pairs[:, 0]] = 0.5 * S_q[pairs[:, 0]] + 0.5 * S_m[pairs[:, 1]]
    np.testing.assert_allclose(S_prof, expected, rtol=1e-4, atol=1e-4)
    assert not np.allclose(S_prof[10:25], S_q[10:25], atol=1e-3)  # the member did change them


def test_two_members_on_a_column_share_its_weight() -> None:
    model = _model(2)
    q, m1, m2, t = _seq(12, 6), _seq(12, 7), _seq(12, 8), _seq(15, 9)
    e = {k: model.embed(v) for k, v in {"q": q, "m1": m1, "m2": m2, "t": t}.items()}
    diag = np.stack([np.arange(12), np.arange(12)], axis=1)
    prof = build_profile(q, e["q"], [ProfileMember(m1, e["m1"], diag),
                                     ProfileMember(m2, e["m2"], diag)], query_weight=0.4)
    assert prof.n_members == 2
    np.testing.assert_allclose(prof.residues.sum(1), 1.0, rtol=1e-6)
    S = {k: model.score_embedded(v, e[k], t, e["t"])[0] for k, v in
         {"q": q, "m1": m1, "m2": m2}.items()}
    S_prof, _ = model.score_embedded(q, prof.embedding, t, e["t"], prof.residues)
    np.testing.assert_allclose(S_prof, 0.4 * S["q"] + 0.3 * S["m1"] + 0.3 * S["m2"],
                               rtol=1e-4, atol=1e-4)
    # numpy embeddings (the torch-free inference path's) give the same profile
    as_np = {k: v.numpy() for k, v in e.items()}
    prof_np = build_profile(q, as_np["q"], [ProfileMember(m1, as_np["m1"], diag),
                                           ProfileMember(m2, as_np["m2"], diag)], query_weight=0.4)
    np.testing.assert_array_equal(prof_np.embedding, prof.embedding)
    np.testing.assert_array_equal(prof_np.residues, prof.residues)


def test_bad_profile_input_is_rejected() -> None:
    model = _model()
    q = _seq(10, 1)
    e_q = model.embed(q)
    with pytest.raises(ValueError, match="outside"):
        build_profile(q, e_q, [ProfileMember(q, e_q, np.array([[3, 10]]))])
    with pytest.raises(ValueError, match="query_weight"):
        build_profile(q, e_q, [], query_weight=0.0)
    with pytest.raises(ValueError, match="residue columns"):
        model.score_embedded(q, e_q, q, e_q, np.ones((10, 5), dtype=np.float32) / 5)

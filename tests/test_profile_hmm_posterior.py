"""HMM–HMM posteriors (the hhm-mac method's model) on tiny HMMs against brute-force enumeration."""

from __future__ import annotations

import math

import numpy as np
import pytest

import homalign.dp.posterior as posterior  # noqa: E402
from homalign.methods.profile import ProteinRep, score_hhm
from homalign.profile import Profile
from homalign.profile.hmm import ProfileHMM, estimate_transitions
from homalign.sequence import Sequence
from test_dp_bruteforce import brute_posterior  # noqa: E402

ROWS_Q = ["MKWV", "MRW-", "-KYV"]
ROWS_T = ["KWAV", "KFAV"]


def _tiny_pair(seed: int):
    rng = np.random.default_rng(seed)
    q = ProfileHMM.from_profile(Profile.from_rows(ROWS_Q[: 1 + seed % 3]))
    t = ProfileHMM.from_profile(Profile.from_rows(ROWS_T[: 1 + seed % 2]))
    # random transition counts make the position-specific gaps differ between columns
    t = ProfileHMM(t.query, t.probs, estimate_transitions(rng.uniform(0, 3, size=(len(t), 7))),
                   t.n_eff, t.neff)
    return ProteinRep(q.query, source=q), ProteinRep(t.query, source=t)


def _vectors(gaps) -> dict[str, np.ndarray]:
    names = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext", "t_del_open", "t_del_ext",
             "q_del_open", "q_del_ext")
    return {n: np.asarray(getattr(gaps, n)) for n in names}


def test_an_hmm_makes_its_weighted_gap_half_once():
    """``pair_gap_costs`` reads each HMM's weighted half (``side_costs``): made on first use per
    weight, the same object afterwards, equal to :func:`hmm_gap_vectors` times the weight."""
    from homalign.profile.hmm import hmm_gap_vectors, pair_gap_costs

    q, t = _tiny_pair(4)
    first = t.hmm.side_costs(0.4)
    assert t.hmm.side_costs(0.4) is first and t.hmm.side_costs(0.5) is not first
    v = hmm_gap_vectors(t.hmm)
    np.testing.assert_array_equal(first.residue_open, (0.4 * v["del_open"]).astype(np.float32))
    np.testing.assert_array_equal(first.slot_ext, (0.4 * v["ins_ext"]).astype(np.float32))
    g = pair_gap_costs(q.hmm, t.hmm, gap_weight=0.4)
    assert g.t_del_open is first.residue_open and g.t_ins_ext is first.slot_ext
    np.testing.assert_allclose(g.q_ins_open, 0.4 * hmm_gap_vectors(q.hmm)["del_open"], rtol=1e-6)


@pytest.mark.parametrize("constant", [False, True])
def test_pair_gap_costs_share_each_hmms_half_with_the_same_values(constant):
    """``pair_gap_costs`` pairs the HMMs' cached halves (``side_costs``): the same eight vectors,
    kernel sums, sign and constant-cost answers as a GapCosts built from the products, with
    nothing copied for the second pair."""
    from homalign.dp import GapCosts
    from homalign.profile.hmm import hmm_gap_vectors, pair_gap_costs

    q, t = _tiny_pair(5)
    hq, ht = q.hmm, t.hmm
    if constant:  # one transition row everywhere: position-independent costs
        ht = ProfileHMM(ht.query, ht.probs, np.tile(ht.transitions[:1], (len(ht), 1)),
                        ht.n_eff, ht.neff)
        hq = ProfileHMM(hq.query, hq.probs, np.tile(hq.transitions[:1], (len(hq), 1)),
                        hq.n_eff, hq.neff)
    w = 0.4 * 0.7
    gq, gt = hmm_gap_vectors(hq), hmm_gap_vectors(ht)
    ref = GapCosts(q_ins_open=w * gq["del_open"], q_ins_ext=w * gq["del_ext"],
                   t_ins_open=w * gt["ins_open"], t_ins_ext=w * gt["ins_ext"],
                   t_del_open=w * gt["del_open"], t_del_ext=w * gt["del_ext"],
                   q_del_open=w * gq["ins_open"], q_del_ext=w * gq["ins_ext"])
    g = pair_gap_costs(hq, ht, gap_weight=0.4, scale=0.7)
    for name, v in _vectors(ref).items():
        np.testing.assert_array_equal(getattr(g, name), v, err_msg=name)
    for a, b in zip(g.kernel_vectors(), ref.kernel_vectors(), strict=True):
        np.testing.assert_array_equal(a, b)
        assert not a.flags.writeable
    assert g.nonnegative == ref.nonnegative
    assert g.constant_costs() == ref.constant_costs()
    assert (ref.constant_costs() is not None) == constant
    again = pair_gap_costs(hq, ht, gap_weight=0.4, scale=0.7)
    assert again.t_del_open is g.t_del_open and again.q_del_ext is g.q_del_ext


def test_side_costs_reject_bad_vectors():
    from homalign.dp.gaps import SideCosts

    side = SideCosts([1.0, 2.0], [0.5, 0.5], [3.0, 3.0, 3.0], [1.0, 1.0, 1.0])
    assert len(side) == 2 and side.nonnegative and not side.constant
    with pytest.raises(ValueError, match="slot_open must have length 3"):
        SideCosts([1.0, 2.0], [0.5, 0.5], [3.0, 3.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="residue_ext must be finite"):
        SideCosts([1.0, 2.0], [0.5, np.nan], [3.0, 3.0, 3.0], [1.0, 1.0, 1.0])
    q, _ = _tiny_pair(1)
    bad = ProfileHMM(q.hmm.query, q.hmm.probs, np.full_like(q.hmm.transitions, np.nan),
                     q.hmm.n_eff, q.hmm.neff, name="broken")
    with pytest.raises(ValueError, match="HMM 'broken': gap costs"):
        bad.side_costs(0.4)


@pytest.mark.parametrize("seed", range(6))
def test_hmm_pair_posteriors_match_brute_force(seed):
    q, t = _tiny_pair(seed)
    ps = score_hhm(q, t, units=math.log(2.0))  # nats: alignment weight exp(score)
    P, log_z = posterior.forward_backward(ps.S, ps.gaps, mode="local")
    P_ref, log_z_ref = brute_posterior(ps.S.astype(np.float64), _vectors(ps.gaps), "local", 1.0)
    np.testing.assert_allclose(P, P_ref, atol=1e-5)
    assert log_z == pytest.approx(log_z_ref, abs=1e-5)
    assert (P.sum(axis=1) <= 1 + 1e-5).all() and (P.sum(axis=0) <= 1 + 1e-5).all()


def test_hhm_mac_pairs_are_confident():
    import homalign

    q = Sequence("q", "MKVLAAGIVGLLLAGCSSHKEEAPKAEEAAPAAEEKTEKAE")
    t = Sequence("t", "MKVLAAGIVALLLSGCSSHKEEAPKAEAAPAEEKTEKAE")
    aln = homalign.align(q, t, method="hhm-mac", mact=0.3)
    opts = {"pseudocounts": "dirichlet"}
    rq, rt = ProteinRep(q, options=opts), ProteinRep(t, options=opts)
    ps = score_hhm(rq, rt, units=math.log(2.0))
    P = posterior.posterior_matrix(ps.S, ps.gaps, mode="local")
    assert aln.length > 30
    assert P[aln.pairs[:, 0], aln.pairs[:, 1]].mean() > 0.5


def test_hhm_scores_use_each_hmms_prepared_side_with_the_same_bits():
    """``score_hhm`` reads the query HMM's odds, made once per HMM: the same bits as
    :func:`hhsearch_scores` of the raw emissions."""
    from homalign.score.profile_scores import hhsearch_scores

    q, t = _tiny_pair(3)
    ps = score_hhm(q, t, hh_shift=-0.03, units=0.7)
    want = hhsearch_scores(q.hmm.probs, t.hmm.probs, q.hmm.background, shift=-0.03, scale=0.7)
    np.testing.assert_array_equal(ps.S, want)
    assert q.hmm.query_odds is q.hmm.query_odds and q.hmm.query_odds.dtype == np.float32
    plain = score_hhm(q, t, hh_shift=0.0, units=1.0)
    np.testing.assert_array_equal(plain.S, hhsearch_scores(q.hmm.probs, t.hmm.probs,
                                                           q.hmm.background))

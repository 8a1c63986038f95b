"""One query profile against many targets in 16 lanes (``score_local_profile``, the pssm search's
kernel): bit-identical to ``align_score`` on the score matrix and GapCosts ``score_pssm`` builds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.test_search import make_db

import homalign
from homalign.alphabet import N_CODES
from homalign.dp import GapCosts, align_score, lanes
from homalign.dp.lanes import score_local_profile
from homalign.methods import METHODS, get_method
from homalign.methods.profile import ProteinRep, score_pssm
from homalign.profile.profile import Profile
from homalign.score.pair_scores import score_values
from homalign.search import engine
from homalign.stats import EVDParams

PARAMS = EVDParams(lam=0.267, K=0.041)  # fixed: no calibration in these tests


def _gap_vectors(rng: np.random.Generator, lq: int, kind: str) -> dict[str, np.ndarray]:
    """Query-side gap vectors: position-specific floats, integers, or constant 11/1."""
    if kind == "constant":
        return {"q_ins_open": np.full(lq, 11.0), "q_ins_ext": np.full(lq, 1.0),
                "q_del_open": np.full(lq + 1, 11.0), "q_del_ext": np.full(lq + 1, 1.0)}
    vec = {"q_ins_open": rng.uniform(0, 14, lq), "q_ins_ext": rng.uniform(0, 2, lq),
           "q_del_open": rng.uniform(0, 14, lq + 1), "q_del_ext": rng.uniform(0, 2, lq + 1)}
    if kind == "integer":
        vec = {k: np.round(v) for k, v in vec.items()}
    return vec


def _reference(P: np.ndarray, targets: list[np.ndarray], vec: dict[str, np.ndarray]) -> np.ndarray:
    """float32 ``align_score`` of each target: the generic path's S and GapCosts."""
    lq = P.shape[0]
    return np.array([align_score(np.ascontiguousarray(P[:, t], dtype=np.float32),
                                 GapCosts.from_vectors(lq, len(t), **vec), "local")
                     for t in targets], dtype=np.float32)


def _check(P: np.ndarray, targets: list[np.ndarray], vec: dict[str, np.ndarray]) -> None:
    got = score_local_profile(P, targets, vec["q_ins_open"], vec["q_ins_ext"],
                              vec["q_del_open"], vec["q_del_ext"])
    assert got.dtype == np.float32 and got.shape == (len(targets),)
    ref = _reference(P, targets, vec)
    assert np.array_equal(got, ref), np.flatnonzero(got != ref)


@pytest.mark.parametrize("n_targets", [1, 15, 16, 17, 33])
@pytest.mark.parametrize("kind", ["float", "integer", "constant"])
def test_profile_lanes_equal_align_score(n_targets: int, kind: str) -> None:
    rng = np.random.default_rng(n_targets * 7 + len(kind))
    for _ in range(3):
        lq = int(rng.integers(1, 70))
        P = rng.normal(-0.5, 3.0, (lq, N_CODES)).astype(np.float32)
        if kind != "float":
            P = np.round(P)
        targets = [rng.integers(0, N_CODES, int(rng.integers(1, 90))) for _ in range(n_targets)]
        _check(P, targets, _gap_vectors(rng, lq, kind))


def test_profile_lanes_length_one_and_all_codes() -> None:
    rng = np.random.default_rng(5)
    all_codes = np.arange(N_CODES)
    for lq in (1, 2, 40):
        P = rng.normal(0.0, 4.0, (lq, N_CODES)).astype(np.float32)
        targets = [np.array([c]) for c in range(N_CODES)]  # length-1 targets, every code
        targets += [all_codes, all_codes[::-1].copy(), rng.permutation(np.tile(all_codes, 3))]
        for kind in ("float", "integer", "constant"):
            _check(P, targets, _gap_vectors(rng, lq, kind))
    # a query of one residue: one positive score is the best (no gap can help)
    P = np.full((1, N_CODES), -1.0, dtype=np.float32)
    P[0, 3] = 5.0
    vec = _gap_vectors(rng, 1, "float")
    got = score_local_profile(P, [np.array([3]), np.array([0, 3, 3]), np.array([1])],
                              vec["q_ins_open"], vec["q_ins_ext"], vec["q_del_open"],
                              vec["q_del_ext"])
    assert got.tolist() == [5.0, 5.0, 0.0]


def test_profile_lanes_pssm_of_a_real_msa() -> None:
    """A PSSM and MSA gap statistics (position-specific), exactly as ``score_pssm`` makes them."""
    rows = ["MKVLAAGIVALLLAAG--CSSHHHWWKLPE", "MKV-AAGLVA-LLSAGKYCSSHQ-WWRLPE",
            "MRVLSAGIVALL--AGKYCTSHHHWW-LPD", "-KVLAAGIIALLLAAG--CSSNHHWWKLPE"]
    prof = Profile.from_rows(rows)
    q = ProteinRep(prof.query, source=prof)
    db, _ = make_db(n_families=2, per_family=3, n_random=30, seed=4)
    targets = [db.codes_of(i) for i in range(len(db))]
    g = q.query_gap_costs(0, 11.0, 1.0)
    assert g.constant_costs() is None  # the position-specific case
    got = score_local_profile(q.pssm(), targets, g.q_ins_open, g.q_ins_ext, g.q_del_open,
                              g.q_del_ext)
    ref = score_values([score_pssm(q, db.sequence(i)) for i in range(len(db))])
    assert np.array_equal(got.astype(np.float64), ref)
    m = get_method("pssm")
    assert m.score_many is not None
    assert np.array_equal(m.score_many(q, targets), ref)


def test_profile_lanes_validation_and_negative_costs() -> None:
    rng = np.random.default_rng(9)
    P = rng.normal(0.0, 3.0, (6, N_CODES)).astype(np.float32)
    vec = _gap_vectors(rng, 6, "float")
    args = (vec["q_ins_open"], vec["q_ins_ext"], vec["q_del_open"], vec["q_del_ext"])
    t = [np.array([1, 2, 3])]
    with pytest.raises(ValueError, match="codes"):
        score_local_profile(P, [np.array([0, N_CODES])], *args)
    with pytest.raises(ValueError, match="codes"):
        score_local_profile(P, [np.array([-1, 2])], *args)
    with pytest.raises(ValueError, match="profile"):
        score_local_profile(np.full((6, 32), 1.0), t, *args)
    with pytest.raises(ValueError, match="profile"):
        score_local_profile(np.where(P > 2, np.inf, P), t, *args)
    with pytest.raises(ValueError, match="length"):
        score_local_profile(P, t, vec["q_ins_open"][:5], *args[1:])
    with pytest.raises(ValueError, match="finite"):
        score_local_profile(P, t, np.full(6, np.nan), *args[1:])
    with pytest.raises(ValueError, match="non-empty"):  # as align_score: no empty matrix
        score_local_profile(P, [np.array([1]), np.zeros(0, dtype=np.int64)], *args)
    with pytest.raises(ValueError, match="Lq >= 1"):
        score_local_profile(np.zeros((0, N_CODES)), t, *(a[:0] for a in args[:2]), args[2][:1],
                            args[3][:1])
    assert score_local_profile(P, [], *args).shape == (0,)
    # a negative cost (outside the fast kernels' condition): the general path, the same scores
    neg = dict(vec, q_ins_ext=vec["q_ins_ext"] - 1.5)
    targets = [rng.integers(0, N_CODES, int(rng.integers(1, 30))) for _ in range(20)]
    _check(P, targets, neg)


@pytest.fixture(scope="module")
def small_db():
    return make_db(n_families=3, per_family=4, n_random=60, seed=2)


def _hits(hits: list) -> list[tuple]:
    return [(h.target_id, h.score, h.bits, h.evalue) for h in hits]


def test_pssm_search_same_hits_with_and_without_fast_path(small_db, monkeypatch) -> None:
    db, _ = small_db
    calls: list[int] = []
    real = lanes.score_local_profile

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(lanes, "score_local_profile", spy)
    rows = ["MKVLAAGIVALLLAAG--CSSHHHWWKLPE", "MKV-AAGLVA-LLSAGKYCSSHQ-WWRLPE",
            "MRVLSAGIVALL--AGKYCTSHHHWW-LPD"]
    prof = Profile.from_rows(rows)
    queries = [db.sequence(db.index_of(n)) for n in ("fam0_0", "fam2_1")]
    fast = [_hits(homalign.search(q, db, method="pssm", traceback=False, params=PARAMS,
                                  evalue=1e3)) for q in queries]
    fast.append(_hits(engine.search(prof.query, db, method="pssm", traceback=False,
                                    params=PARAMS, evalue=1e3,
                                    query_rep=ProteinRep(prof.query, source=prof))))
    assert len(calls) == 3 and all(c > 0 for c in calls)
    monkeypatch.setitem(METHODS, "pssm", dataclasses.replace(get_method("pssm"), score_many=None))
    slow = [_hits(homalign.search(q, db, method="pssm", traceback=False, params=PARAMS,
                                  evalue=1e3)) for q in queries]
    slow.append(_hits(engine.search(prof.query, db, method="pssm", traceback=False,
                                    params=PARAMS, evalue=1e3,
                                    query_rep=ProteinRep(prof.query, source=prof))))
    assert len(calls) == 3  # the generic path did not call the kernel
    assert all(fast) and fast == slow
    assert fast[0][0][0] == "fam0_0"


@pytest.mark.parametrize("avx2", [False, True])
def test_an_integer_profile_with_uniform_gaps_runs_in_int8_lanes(monkeypatch, avx2: bool) -> None:
    """PSI-BLAST's kind of profile (integer scores, uniform integer gaps) goes through the int8
    kernel (the host's, and the 32-lane AVX2 one, which any AVX2 CPU runs); targets past its
    limit (here long matches) are rescored in float32, every score align_score's."""
    from homalign.dp.simd import host_has

    if not host_has("avx2"):
        pytest.skip("no AVX2 on this CPU: the int8 kernels do not run here")
    if avx2:
        monkeypatch.setattr(lanes.lanes_int, "INT8_LANES", lanes.lanes_int.LANES8 // 2)
    rng = np.random.default_rng(11)
    lq = 120
    P = np.round(rng.normal(-1.0, 2.0, (lq, N_CODES))).astype(np.float32)
    best = rng.integers(0, N_CODES, lq)
    P[np.arange(lq), best] = 6.0  # the query's own residues score high
    targets = [rng.integers(0, N_CODES, int(rng.integers(1, 200))) for _ in range(150)]
    targets += [best.copy(), np.concatenate([rng.integers(0, N_CODES, 30), best[10:90]])]
    calls: list[tuple[int, int]] = []
    real = lanes.lanes_int.int8_profile_scores

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        scores, sat = real(*args, **kwargs)
        calls.append((len(scores), int(sat.sum())))
        return scores, sat

    monkeypatch.setattr(lanes.lanes_int, "int8_profile_scores", spy)
    vec = _gap_vectors(rng, lq, "constant")
    _check(P, targets, vec)
    assert calls and calls[0][0] == len(targets) and calls[0][1] >= 2  # the two long matches
    calls.clear()
    _check(P + 0.5, targets, vec)  # not integer: the float32 kernel alone
    _check(P, targets, _gap_vectors(rng, lq, "integer"))  # position-specific: float32 alone
    assert not calls

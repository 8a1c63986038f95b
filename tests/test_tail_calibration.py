"""Empirical E-value calibration: the power law, its fit, and the E-values search reports."""

from __future__ import annotations

import doctest
import math
from importlib import resources

import numpy as np
import pytest

import homalign.search.tail_calibration as tail_module
from homalign.io.pir import read_pir
from homalign.search import SequenceDB, search
from homalign.search.tail_calibration import (
    TailCalibration,
    bits_from_evalue,
    calibration_for,
    fit_tail,
)
from homalign.sequence import Sequence


def test_the_module_examples_hold() -> None:
    failed, tried = doctest.testmod(tail_module)
    assert tried >= 3 and failed == 0


def test_the_map_is_monotone_linear_in_the_database_and_capped() -> None:
    cal = TailCalibration(A=0.01, b=0.5)
    v = np.logspace(-30, 12, 50)
    e = cal.evalues(v, 10_000)
    assert np.all(np.diff(e) >= 0)
    assert e[-1] == 10_000  # never more than one chance hit per sequence
    # per-target rate fixed: twice the database, twice the E-value
    np.testing.assert_allclose(cal.evalues(v * 2, 20_000)[:10], 2 * e[:10], rtol=1e-12)


def test_the_fit_recovers_a_power_law_from_poisson_counts() -> None:
    rng = np.random.default_rng(0)
    true = TailCalibration(A=0.006, b=0.45)
    x = np.array([1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0])
    hits = rng.poisson(true.evalues(x, 11_000) * 20_000)
    cal = fit_tail(x, hits, 20_000, 11_000)
    assert cal.b == pytest.approx(0.45, abs=0.05)
    np.testing.assert_allclose(cal.evalues(x, 11_000), true.evalues(x, 11_000), rtol=0.3)


def test_a_fit_without_two_counted_thresholds_is_refused() -> None:
    with pytest.raises(ValueError, match="two thresholds"):
        fit_tail([1e-3, 1.0], [0, 3], 100, 1000)


def test_the_shipped_learned_calibration_is_conservative_below_one() -> None:
    cal = calibration_for("learned")
    assert cal is not None and "held-out train-fold" in cal.source
    v = np.array([1e-20, 1e-5, 1e-2])
    assert np.all(cal.evalues(v, 11_487) > v)  # real proteins' tail is heavier than the null's


def test_a_truncation_deflates_only_weak_evalues_and_keeps_the_order() -> None:
    plain = TailCalibration(A=0.01, b=0.5)
    cut = plain.with_truncation(2.0, 10_000, 80)
    v = np.logspace(-12, 6, 400)
    before, after = plain.evalues(v, 10_000), cut.evalues(v, 10_000)
    uncapped = before[1:] < 10_000
    assert np.all(np.diff(after)[uncapped] > 0) and np.all(np.diff(after) >= 0)
    strong = before <= 0.1
    np.testing.assert_array_equal(after[strong], before[strong])  # the strong end untouched
    weak = before >= 10.0
    np.testing.assert_allclose(after[weak], before[weak] * math.exp(-2.0), rtol=1e-12)
    assert np.all(after <= before)
    np.testing.assert_allclose(cut.undo_truncation(after, 10_000), before, rtol=1e-9)


def test_a_truncation_scales_with_the_database_its_candidates_cut() -> None:
    cut = TailCalibration(A=0.01, b=0.5).with_truncation(2.0, 10_000, 80)
    e = np.array([0.05, 1.0, 5.0, 50.0])
    # a database of no more sequences than the candidates: nothing is truncated
    np.testing.assert_array_equal(cut.truncate(e, 80), e)
    half = cut.truncate(e, int(80 * math.sqrt(10_000 / 80)))  # halfway in ln(N / C)
    full = cut.truncate(e, 10_000)
    assert np.all(full[1:] < half[1:]) and np.all(half[1:] < e[1:])
    np.testing.assert_allclose(np.log(e[3] / half[3]), 1.0, rtol=1e-3)
    np.testing.assert_array_equal(cut.truncate(e, 1_000_000), full)  # larger: as the fit's


def test_a_truncation_that_would_reorder_hits_is_refused() -> None:
    with pytest.raises(ValueError, match="truncation"):
        TailCalibration(A=0.01, b=0.5).with_truncation(math.log(100.0), 10_000, 80)
    with pytest.raises(ValueError, match="truncation"):
        TailCalibration(A=0.01, b=0.5).with_truncation(1.0, 50, 80)


def test_the_truncation_fit_brings_one_chance_hit_a_query_to_evalue_one() -> None:
    rng = np.random.default_rng(5)
    # 200 queries' chance hits, 0.2 a query at E <= 1 (a conservative list, as a learned
    # search's over SCOPe domains): E-values log-uniform per unit, rate 0.2 E
    e = np.sort(rng.uniform(0, 10.0, rng.poisson(0.2 * 10 * 200)))
    k = tail_module.fit_truncation(e, 200)
    cut = TailCalibration(A=1e-9, b=1.0).with_truncation(k, 10_000, 80)
    after = cut.truncate(e, 10_000)
    assert (after <= 1.0).sum() == 200  # one a query
    assert np.array_equal(np.argsort(after, kind="stable"), np.arange(len(e)))
    # a list that already holds one a query at E <= 1 is left as it is
    assert tail_module.fit_truncation(np.linspace(0.001, 1.0, 300), 200) == 0.0
    with pytest.raises(ValueError, match="chance hits"):
        tail_module.fit_truncation(e[:10], 200)


def test_the_shipped_learned_rankings_are_truncated_at_the_search_candidates() -> None:
    from homalign.search.engine import LEARNED_RESCORE

    for ranking in ("learned", "learned+profile", "learned@3"):
        cal = calibration_for(ranking)
        assert cal is not None and 0 < cal.truncation < math.log(100.0)
        assert cal.candidates == LEARNED_RESCORE and cal.truncation_db > LEARNED_RESCORE


def _shuffled_decoys(n: int, seed: int) -> list[Sequence]:
    """Real HOMSTRAD residues, each sequence shuffled on its own: composition kept, homology
    gone (a sequence drawn twice is shuffled twice)."""
    rng = np.random.default_rng(seed)
    root = resources.files("homalign").joinpath("data", "homstrad_dev")
    seqs = [entry.aligned.replace("-", "").upper()
            for fam in sorted(p.name for p in root.iterdir())
            for entry in read_pir(root.joinpath(fam, f"{fam}.ali"))]
    out = []
    for i, k in enumerate(rng.choice(len(seqs), n, replace=len(seqs) < n)):
        res = np.array(list(seqs[k]))
        rng.shuffle(res)
        out.append(Sequence(f"decoy{i}", "".join(res)))
    return out


def _chained_decoys(n: int, parts: int, seed: int) -> list[Sequence]:
    """Multi-domain-length decoys: ``parts`` shuffled sequences joined end to end each."""
    pieces = _shuffled_decoys(n * parts, seed)
    return [Sequence(f"chain{i}", "".join(p.residues for p in pieces[i * parts:(i + 1) * parts]))
            for i in range(n)]


def _reported(values: list[float], ranking: str, q: Sequence, db: SequenceDB) -> np.ndarray:
    """What a learned search reports for ranking values, composed here step by step: the
    database's chance hits over its lengths (the score's law over all lengths), then the
    ranking's tail calibration."""
    from homalign.methods import get_method
    from homalign.stats import chance_evalues, length_histogram

    m = get_method("learned")
    chance = chance_evalues(values, m.null_params(), m.chance_params(), len(q), len(db),
                            length_histogram(db.lengths))
    tail = calibration_for(ranking)
    return chance if tail is None else tail.evalues(chance, len(db))


def test_learned_search_of_shuffled_decoys_reports_no_more_chance_hits_than_its_evalues() -> None:
    # 3,000 targets: as in a database search, the 150 rescored candidates are a small part of
    # the database (docs/decisions.md: E-values of small databases)
    decoys = _shuffled_decoys(3020, seed=1)
    db = SequenceDB.from_sequences(decoys[20:])
    counts = {1.0: 0, 10.0: 0}
    for q in decoys[:20]:
        hits = search(q, db, method="learned", evalue=10.0, traceback=False)
        for h in hits:
            for x in counts:
                counts[x] += h.evalue <= x
            # the bit score is BLAST's of the E-value
            assert h.bits == pytest.approx(math.log2(len(q) * db.total_length / h.evalue))
    # mean chance hits per query at E <= x: at most twice x (not anti-conservative)
    assert counts[1.0] / 20 <= 2.0 and counts[10.0] / 20 <= 20.0


def test_learned_evalues_count_chance_hits_among_long_proteins_too() -> None:
    # chains of four shuffled HOMSTRAD sequences (~700-1,000 residues, as full-length proteins):
    # the ranking law, fitted on domain pairs, would call most of them significant (the learned
    # score grows linearly with long unrelated proteins); counted over the database's lengths
    # they are not
    decoys = _chained_decoys(420, 4, seed=4)
    db = SequenceDB.from_sequences(decoys[20:])
    counts = {1e-3: 0, 1.0: 0}
    for q in decoys[:20]:
        for h in search(q, db, method="learned", evalue=1.0, traceback=False):
            for x in counts:
                counts[x] += h.evalue <= x
    assert counts[1.0] / 20 <= 2.0 and counts[1e-3] == 0


def test_search_reports_the_calibrated_values_of_the_null_laws() -> None:
    decoys = _shuffled_decoys(60, seed=2)
    db = SequenceDB.from_sequences(decoys[1:])
    q = decoys[0]
    raw = search(q, db, method="learned", evalue=math.inf, traceback=False, calibrated=False)
    cal = search(q, db, method="learned", evalue=math.inf, traceback=False)
    assert calibration_for("learned") is not None
    raw_e = {h.target_index: h.evalue for h in raw}
    got = np.array([h.evalue for h in cal])
    np.testing.assert_allclose(got, _reported([raw_e[h.target_index] for h in cal], "learned",
                                              q, db), rtol=1e-12)
    uncapped = got < len(db)  # the same ranking, except ties at the cap of one per sequence
    assert uncapped.sum() > 5
    assert [h.target_index for h in raw][: uncapped.sum()] == \
        [h.target_index for h in cal][: uncapped.sum()]
    np.testing.assert_allclose([h.bits for h in cal],
                               bits_from_evalue(got, len(q), db.total_length), rtol=1e-12)


def test_the_fused_learned_at_3_ranking_reports_its_calibrated_values() -> None:
    import homalign.search.iterative as iterative

    decoys = _shuffled_decoys(40, seed=3)
    db = SequenceDB.from_sequences(decoys[1:])
    q = decoys[0]
    tail = calibration_for("learned@3")
    assert tail is not None and "held-out train-fold" in tail.source
    got = iterative.iterative_search(q, db, 3, "learned", evalue=math.inf, max_hits=None,
                                     prefilter=False, traceback=False)
    saved = iterative.calibrated_hits
    try:  # the same search without the calibration step: the fused geometric means
        iterative.calibrated_hits = lambda hits, *_args: hits
        raw = iterative.iterative_search(q, db, 3, "learned", evalue=math.inf, max_hits=None,
                                         prefilter=False, traceback=False)
    finally:
        iterative.calibrated_hits = saved
    raw_e = {h.target_index: h.evalue for h in raw}
    assert set(raw_e) == {h.target_index for h in got}
    np.testing.assert_allclose([h.evalue for h in got],
                               _reported([raw_e[h.target_index] for h in got], "learned@3", q,
                                         db), rtol=1e-12)
    np.testing.assert_allclose([h.bits for h in got],
                               bits_from_evalue([h.evalue for h in got], len(q),
                                                db.total_length), rtol=1e-12)

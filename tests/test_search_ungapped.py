"""Ungapped scores of one query against a database (homalign.search.ungapped and the int8
kernel of homalign.dp.lanes_int) and the learned search's Smith-Waterman pass behind them
(homalign.search.engine.best_by_sw): brute force, every lane count, saturation."""

from __future__ import annotations

import numpy as np
import pytest
from tests.proteins import mutate, random_protein

from homalign.dp import lanes_int
from homalign.dp.simd import host_has
from homalign.matrices import substitution_matrix
from homalign.search import SequenceDB, engine
from homalign.search.sw_scores import sw_scores
from homalign.search.ungapped import ungapped_scores
from homalign.sequence import Sequence

B62 = substitution_matrix("BLOSUM62")


def _brute(q: np.ndarray, t: np.ndarray, M: np.ndarray = B62) -> float:
    """The best segment of any diagonal, by enumeration."""
    S = M[np.ix_(q, t)]
    best = 0.0
    for d in range(-len(q) + 1, len(t)):
        diag = np.diagonal(S, offset=d)
        for a in range(len(diag)):
            best = max(best, float(np.cumsum(diag[a:]).max(initial=0.0)))
    return best


def _by_prefix_sums(q: np.ndarray, t: np.ndarray, M: np.ndarray = B62) -> float:
    """:func:`_brute` in linear time a diagonal: the best segment ends where its prefix sum
    most exceeds an earlier one."""
    S = M[np.ix_(q, t)]
    best = 0.0
    for d in range(-len(q) + 1, len(t)):
        c = np.concatenate(([0.0], np.cumsum(np.diagonal(S, offset=d))))
        best = max(best, float((c - np.minimum.accumulate(c)).max()))
    return best


def _packed(ts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.concatenate(([0], np.cumsum([len(t) for t in ts]))).astype(np.int64)
    codes = np.concatenate(ts).astype(np.uint8) if ts else np.zeros(0, np.uint8)
    return codes, offsets


def _database(rng: np.random.Generator, q: np.ndarray, n: int) -> list[np.ndarray]:
    """n targets of 1-300 residues: random, the query itself (saturates int8), a long run of
    tryptophans, and mutated copies of the query."""
    ts = [rng.integers(0, 20, int(rng.integers(1, 300))) for _ in range(n)]
    ts[3] = q.copy()
    ts[11] = np.full(40, 17)  # W: 11 a residue against the query's W run below
    for k in (20, 21, 22):
        ts[k] = np.asarray(q[5:120]).copy()
        ts[k][rng.random(len(ts[k])) < 0.5] = rng.integers(0, 20)
    return ts


def test_equals_brute_force_on_small_pairs() -> None:
    rng = np.random.default_rng(3)
    q = rng.integers(0, 20, 17)
    ts = [rng.integers(0, 20, int(rng.integers(0, 25))) for _ in range(70)]
    codes, offsets = _packed(ts)
    got = ungapped_scores(q, codes, offsets, np.arange(len(ts)))
    assert got.dtype == np.float32
    assert got.tolist() == [_brute(q, t) for t in ts] == [_by_prefix_sums(q, t) for t in ts]


@pytest.mark.parametrize("lanes", [0, 32, 64])
def test_every_kernel_gives_the_reference_scores(monkeypatch: pytest.MonkeyPatch,
                                                 lanes: int) -> None:
    """64 lanes (AVX-512 VBMI), 32 (AVX2: two vpshufb) and the numba reference agree, saturated
    targets (the query itself, a tryptophan run) included, with or without the database's
    layout, for a subset of the targets too."""
    if lanes == 64 and not lanes_int.AVAILABLE8:
        pytest.skip("no AVX-512 VBMI on this CPU: its kernel cannot run here")
    if lanes == 32 and not host_has("avx2"):
        pytest.skip("no AVX2 on this CPU: its kernel cannot run here")
    rng = np.random.default_rng(5)
    q = rng.integers(0, 20, 150)
    q[60:80] = 17
    ts = _database(rng, q, 203)
    codes, offsets = _packed(ts)
    want = np.array([_by_prefix_sums(q, t) for t in ts], dtype=np.float32)
    assert want[3] > lanes_int.int8_ungapped_limit(B62) and want[11] >= 20 * 11
    monkeypatch.setattr(lanes_int, "INT8_LANES", lanes)
    db = SequenceDB([f"t{k}" for k in range(len(ts))], [""] * len(ts), codes, offsets)
    every = np.arange(len(ts))
    assert np.array_equal(ungapped_scores(q, codes, offsets, every), want)
    assert np.array_equal(ungapped_scores(q, codes, offsets, every, db=db), want)
    assert (("int8_layout", lanes) in db.cache) == bool(lanes)
    pick = np.array([11, 3, 0, 202, 21, 7])
    assert np.array_equal(ungapped_scores(q, codes, offsets, pick, db=db), want[pick])
    assert ungapped_scores(q[:0], codes, offsets, every).tolist() == [0.0] * len(ts)
    if lanes:
        scores, sat = lanes_int.int8_ungapped_scores(B62, lanes_int.int8_ungapped_limit(B62),
                                                     q, codes, offsets[:-1],
                                                     np.diff(offsets))
        assert sat[3] and sat[11] and np.array_equal(scores[~sat], want[~sat])


def test_limits() -> None:
    assert lanes_int.int8_ungapped_limit(B62) == 127 - 11
    assert lanes_int.int8_ungapped_limit(B62 + 0.5) is None
    assert lanes_int.int8_ungapped_limit(np.full((4, 4), 127.0)) is None


def _db(n: int, seed: int = 7) -> tuple[SequenceDB, Sequence]:
    rng = np.random.default_rng(seed)
    base = random_protein(rng, 140)
    seqs = [Sequence(f"r{i}", random_protein(rng, int(rng.integers(30, 260)))) for i in range(n)]
    seqs[9] = Sequence("self", base)
    for k in (30, 31, 32, 33):
        seqs[k] = Sequence(f"hom{k}", mutate(rng, base, 0.5))
    return SequenceDB.from_sequences(seqs), Sequence("q", base)


def test_the_sw_pass_scores_the_best_by_ungapped_score(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """In a database larger than UNGAPPED_CANDIDATES, the n best by Smith-Waterman come from
    the best UNGAPPED_CANDIDATES by ungapped score (and are all of them in a smaller one); the
    scores are kept for the query, and a deeper ask scores again."""
    db, q = _db(120)
    every = np.arange(len(db))
    ug = ungapped_scores(q.codes, db.codes, db.offsets, every)
    sw = sw_scores(q.codes, db.codes, db.offsets, every, **engine.candidate_sw())
    monkeypatch.setattr(engine, "UNGAPPED_CANDIDATES", 25)
    first = np.sort(np.argsort(-ug, kind="stable")[:25])
    want = np.sort(first[np.argsort(-sw[first], kind="stable")[:10]])
    calls = []
    real = engine.ungapped_scores
    monkeypatch.setattr(engine, "ungapped_scores",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    assert np.array_equal(engine.best_by_sw(q, db, every, 10), want)
    assert {9, 30, 31, 32, 33} <= set(want.tolist())
    assert np.array_equal(engine.best_by_sw(q, db, every, 10), want) and len(calls) == 1
    deeper = engine.best_by_sw(q, db, every, 40)  # more than 25: the best 40 by ungapped score
    first40 = np.sort(np.argsort(-ug, kind="stable")[:40])
    assert np.array_equal(deeper, first40) and len(calls) == 2
    monkeypatch.setattr(engine, "UNGAPPED_CANDIDATES", 1000)  # more than the database holds
    db.cache.clear()
    assert np.array_equal(engine.best_by_sw(q, db, every, 10),
                          np.sort(np.argsort(-sw, kind="stable")[:10]))
    assert len(calls) == 2


def test_an_exact_match_stays_whatever_its_ungapped_rank(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A target identical to a short query scores below long similar targets by ungapped score,
    and is still among the candidates."""
    rng = np.random.default_rng(9)
    short = random_protein(rng, 12)
    seqs = [Sequence(f"r{i}", random_protein(rng, 200)) for i in range(60)]
    long_q = short * 4
    for k in range(10):
        seqs[k] = Sequence(f"rep{k}", mutate(rng, long_q, 0.05))
    seqs[50] = Sequence("exact", short)
    db = SequenceDB.from_sequences(seqs)
    q = Sequence("q", short)
    every = np.arange(len(db))
    ug = ungapped_scores(q.codes, db.codes, db.offsets, every)
    monkeypatch.setattr(engine, "UNGAPPED_CANDIDATES", 5)
    assert 50 not in np.argsort(-ug, kind="stable")[:5]
    assert 50 in engine.best_by_sw(q, db, every, 3).tolist()


def test_module_example() -> None:
    import doctest

    from homalign.search import ungapped

    failed, tried = doctest.testmod(ungapped)
    assert tried >= 1 and failed == 0


def test_a_database_past_the_ungapped_cut_searches_alike_in_workers(tmp_path) -> None:
    """A makedb directory of more than UNGAPPED_CANDIDATES sequences: the learned search's
    candidates come through the ungapped pass (in each worker process too), its hits are the
    same in one process and in two, and the query's homologues are found."""
    from homalign.io import FastaRecord, write_fasta
    from homalign.search import makedb, open_database
    from homalign.search.parallel import iter_search

    rng = np.random.default_rng(13)
    n = engine.UNGAPPED_CANDIDATES + 200
    base = [random_protein(rng, 90) for _ in range(3)]
    recs = [FastaRecord(f"r{i}", "", random_protein(rng, int(rng.integers(40, 160))))
            for i in range(n)]
    for k, b in enumerate(base):
        for m in range(3):
            recs[100 * k + m] = FastaRecord(f"hom{k}_{m}", "", mutate(rng, b, 0.35))
    write_fasta(tmp_path / "db.fa", recs)
    db = open_database(makedb(tmp_path / "db.fa", tmp_path / "db"))
    queries = [Sequence(f"q{k}", b) for k, b in enumerate(base)]
    one = list(iter_search(queries, db, "learned", workers=1))
    assert len(db.cache["sw-pass"][1]) == engine.UNGAPPED_CANDIDATES  # SW scored that many
    two = list(iter_search(queries, db, "learned", workers=2))
    key = [[(h.target_id, h.score, h.evalue, h.alignment.pairs.tolist()) for h in hits]
           for _, hits in one]
    assert key == [[(h.target_id, h.score, h.evalue, h.alignment.pairs.tolist()) for h in hits]
                   for _, hits in two]
    for k, (_, hits) in enumerate(one):
        assert {f"hom{k}_{m}" for m in range(3)} <= {h.target_id for h in hits}

"""The reverse null: hits of biased composition lose what their reversed targets also score."""

from __future__ import annotations

import doctest
from importlib import resources

import numpy as np
import pytest

import homalign.search.engine as engine
import homalign.search.profile_round as profile_round
import homalign.search.reverse_null as reverse_null
from homalign.api import search
from homalign.io.pir import read_pir
from homalign.search import SequenceDB
from homalign.sequence import Sequence
from homalign.stats import karlin_altschul

AA = "ACDEFGHIKLMNPQRSTVWY"


def test_the_module_examples_hold() -> None:
    failed, tried = doctest.testmod(reverse_null)
    assert tried >= 5 and failed == 0


def test_a_reversed_database_reads_every_target_backwards() -> None:
    rng = np.random.default_rng(0)
    seqs = [Sequence(f"s{i}", "".join(rng.choice(list(AA), int(rng.integers(5, 40)))))
            for i in range(30)]
    db = SequenceDB.from_sequences(seqs)
    picked = [17, 3, 29, 3]
    rev = reverse_null.reversed_database(db, picked)
    assert [rev.sequence(i).residues for i in range(len(picked))] == \
        [seqs[t].residues[::-1] for t in picked]


def _biased(rng: np.random.Generator, n: int, name: str) -> Sequence:
    """A sequence three quarters P, A, S and G (proline-rich, as collagen-like or linker
    proteins), the rest uniform."""
    p = np.full(20, 0.5)
    for a, w in zip("PASG", (9, 6, 4, 3), strict=True):
        p[AA.index(a)] = w
    return Sequence(name, "".join(rng.choice(list(AA), n, p=p / p.sum())))


def _uniform(rng: np.random.Generator, n: int, name: str) -> Sequence:
    return Sequence(name, "".join(rng.choice(list(AA), n)))


@pytest.fixture(scope="module")
def biased_case() -> tuple[Sequence, SequenceDB]:
    """A biased query and a database of 20 unrelated sequences of its composition among 500
    of uniform composition: every hit is a chance hit, most of them strong by composition."""
    rng = np.random.default_rng(0)
    q = _biased(rng, 250, "query")
    db = SequenceDB.from_sequences(
        [_biased(rng, int(rng.integers(150, 300)), f"biased{i}") for i in range(20)]
        + [_uniform(rng, int(rng.integers(100, 300)), f"uniform{i}") for i in range(500)])
    return q, db


@pytest.mark.parametrize("profile_round_on", [True, False])
def test_chance_hits_of_a_shared_composition_are_no_longer_strong(
        biased_case: tuple[Sequence, SequenceDB], monkeypatch: pytest.MonkeyPatch,
        profile_round_on: bool) -> None:
    q, db = biased_case

    def strong() -> int:
        hits = search(q, db, method="learned", evalue=10.0, profile_round=profile_round_on)
        return sum(h.evalue <= 1e-3 for h in hits)

    guarded = strong()
    monkeypatch.setattr(engine, "REVERSE_CHECK", 0.0)
    monkeypatch.setattr(profile_round, "REVERSE_CHECK", 0.0)
    unguarded = strong()
    # without the reverse null all 20 sequences of the query's composition reach E <= 1e-3
    assert unguarded >= 15
    assert guarded <= unguarded / 10


def test_true_homologues_keep_their_evalues(monkeypatch: pytest.MonkeyPatch) -> None:
    # a HOMSTRAD family among 300 shuffled sequences: homology survives no reversal, so the
    # guard leaves the family's values as they are
    root = resources.files("homalign").joinpath("data", "homstrad_dev")
    fam = _family("ALAD")
    rng = np.random.default_rng(3)
    others = [e.aligned.replace("-", "").upper()
              for name in sorted(p.name for p in root.iterdir())[1:40]
              for e in read_pir(root.joinpath(name, f"{name}.ali"))]
    decoys = [Sequence(f"d{i}", "".join(rng.permutation(list(s))))
              for i, s in enumerate(others)]
    db = SequenceDB.from_sequences(fam[1:] + decoys)
    with_guard = {h.target_id: h.evalue for h in search(fam[0], db, method="learned")}
    monkeypatch.setattr(engine, "REVERSE_CHECK", 0.0)
    monkeypatch.setattr(profile_round, "REVERSE_CHECK", 0.0)
    without = {h.target_id: h.evalue for h in search(fam[0], db, method="learned")}
    members = [s.id for s in fam[1:]]
    assert members and all(without[m] <= 1e-3 for m in members)
    assert [with_guard[m] for m in members] == [without[m] for m in members]


def _family(name: str) -> list[Sequence]:
    root = resources.files("homalign").joinpath("data", "homstrad_dev")
    return [Sequence(f"{name}{i}", e.aligned.replace("-", "").upper())
            for i, e in enumerate(read_pir(root.joinpath(name, f"{name}.ali")))]


def test_the_round_excess_is_zero_for_homologues_and_large_for_a_biased_pair() -> None:
    fam = _family("ALAD")
    rng = np.random.default_rng(1)
    biased_q = _biased(rng, 250, "biased query")
    db = SequenceDB.from_sequences(fam[1:] + [_biased(rng, 250, "biased")])
    ka = karlin_altschul("BLOSUM62", 11.0, 1.0)
    gaps = {"matrix": "BLOSUM62", "gap_open": 11.0, "gap_extend": 1.0}
    members = np.arange(len(fam) - 1)
    excess = reverse_null.reverse_excess
    assert (excess(engine.search, fam[0], db, members, 5.0, "sw", ka, **gaps) == 0).all()
    biased = np.array([len(fam) - 1])
    assert excess(engine.search, biased_q, db, biased, 5.0, "sw", ka, **gaps)[0] > 1.0
    # the compiled helper the learned gate and the round's MSA use: the same excess
    every = np.arange(len(db))
    for query in (fam[0], biased_q):
        np.testing.assert_allclose(reverse_null.sw_reverse_excess(query, db, every, 5.0),
                                   excess(engine.search, query, db, every, 5.0, "sw", ka, **gaps),
                                   rtol=1e-9)

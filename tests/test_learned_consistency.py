"""Consistency through database homologues: the transformation, the homologue finder, the
``homologs`` option of ``method="learned"`` and ``homalign align --homologs``."""

from __future__ import annotations

import numpy as np
import pytest

import homalign
from homalign.cli import main
from homalign.methods.learned import HOMOLOG_EVALUE
from homalign.model import load_bundled
from homalign.model.consistency import CONSISTENCY_THRESHOLD, consistency_transform
from homalign.model.decode import mea_align, posterior_matrix
from homalign.search import SequenceDB
from homalign.search.homologs import find_homologs
from homalign.sequence import Sequence
from proteins import mutate, random_protein


@pytest.fixture(scope="module")
def family() -> dict:
    """An ancestor's three descendants x, y (remote from each other) and z (between them, with
    extra residues either side), plus unrelated sequences."""
    rng = np.random.default_rng(5)
    anc = random_protein(rng, 110)
    x, y = mutate(rng, anc, 0.45), mutate(rng, anc, 0.45)
    z = random_protein(rng, 60) + mutate(rng, anc, 0.15) + random_protein(rng, 60)
    unrelated = [Sequence(f"u{k}", random_protein(rng, int(rng.integers(80, 220)))) for k in range(25)]
    return {"x": Sequence("x", x), "y": Sequence("y", y),
            "db": SequenceDB.from_sequences([Sequence("z", z), *unrelated]),
            "unrelated_db": SequenceDB.from_sequences(unrelated)}


def test_transform_is_probcons_average():
    rng = np.random.default_rng(0)
    P = rng.random((4, 5)).astype(np.float32) * 0.2
    A, B = rng.random((4, 3)) * 0.3, rng.random((3, 5)) * 0.3
    C, D = rng.random((4, 6)) * 0.3, rng.random((6, 5)) * 0.3
    np.testing.assert_allclose(consistency_transform(P, []), P)
    np.testing.assert_allclose(consistency_transform(P, [(A, B), (C, D)]),
                               (2 * P + A @ B + C @ D) / 4, rtol=1e-5)
    # z = x itself (P(x~x) = I) leaves the posterior as it is
    np.testing.assert_allclose(consistency_transform(P, [(np.eye(4), P)]), P, rtol=1e-6)
    with pytest.raises(ValueError, match="intermediate 0"):
        consistency_transform(P, [(A, C.T)])


def test_products_ignore_posteriors_below_the_floor_and_stay_normal():
    from homalign.model.consistency import PRODUCT_FLOOR

    rng = np.random.default_rng(3)
    P = rng.random((7, 5)).astype(np.float32)
    A = rng.random((7, 6)).astype(np.float32)
    B = rng.random((6, 5)).astype(np.float32)
    tiny_a, tiny_b = A.copy(), B.copy()
    tiny_a[::2, 1] = PRODUCT_FLOOR / 2  # below the floor: as if 0
    tiny_b[3, ::2] = np.float32(1e-40)  # a subnormal
    zero_a, zero_b = A.copy(), B.copy()
    zero_a[::2, 1] = 0
    zero_b[3, ::2] = 0
    got = consistency_transform(P, [(tiny_a, tiny_b)])
    np.testing.assert_array_equal(got, consistency_transform(P, [(zero_a, zero_b)]))
    # a value at the floor is kept: row 0 of P' is then its product alone
    P[0] = 0
    kept = zero_a.copy()
    kept[0] = 0
    kept[0, 1] = PRODUCT_FLOOR
    row = consistency_transform(P, [(kept, B)])[0]
    np.testing.assert_allclose(row, PRODUCT_FLOOR * B[1] / 3, rtol=1e-6)
    assert (row > 0).all()
    # and the smallest product of two kept values is a normal float32
    assert PRODUCT_FLOOR * PRODUCT_FLOOR >= np.finfo(np.float32).tiny


def test_find_homologs_returns_the_hit_region_with_flanks(family):
    hits = find_homologs(family["x"], family["db"], max_homologs=3, flank=5)
    assert [h.id.split("/")[0] for h in hits] == ["z"]
    z = family["db"].sequence(family["db"].index_of("z")).residues
    region = hits[0].residues
    assert region in z and 100 <= len(region) < len(z) - 60  # trimmed to the homologous core
    assert find_homologs(family["x"], family["unrelated_db"]) == []
    assert find_homologs(family["x"], family["db"], max_homologs=0) == []
    with pytest.raises(ValueError, match="max_homologs"):
        find_homologs(family["x"], family["db"], max_homologs=-1)


def test_homologue_regions_are_the_spans_of_the_searchs_own_tracebacks(monkeypatch):
    """Only the hits that are kept are traced back, a few at a time; the regions are still the
    spans (plus flank) of the alignments a traced-back search reports, distinct, best first,
    past duplicates and over more than one batch."""
    from homalign.search import homologs
    from homalign.search.engine import search

    rng = np.random.default_rng(8)
    anc = random_protein(rng, 120)
    x = Sequence("x", mutate(rng, anc, 0.2))
    seqs = []
    for k in range(9):
        core = mutate(rng, anc, 0.05 + 0.04 * k)
        seqs.append(Sequence(f"z{k}", random_protein(rng, 40) + core + random_protein(rng, 40)))
    # copies of the two best: the first batch holds too few distinct regions
    seqs += [Sequence(f"dup0{k}", seqs[0].residues) for k in range(3)]
    seqs += [Sequence(f"dup1{k}", seqs[1].residues) for k in range(2)]
    seqs += [Sequence(f"u{k}", random_protein(rng, 150)) for k in range(20)]
    db = SequenceDB.from_sequences(seqs)
    batches = []
    real = homologs.get_method

    class Counted:
        def __init__(self, name):
            self.method = real(name)

        def align_hits(self, query, targets, *args, **kwargs):
            batches.append(len(targets))
            return self.method.align_hits(query, targets, *args, **kwargs)

    monkeypatch.setattr(homologs, "get_method", Counted)
    for max_homologs, flank in ((3, 5), (6, 0)):
        want = []
        for h in search(x, db, method="sw", evalue=HOMOLOG_EVALUE, max_hits=4 * max_homologs,
                        prefilter_options=homologs.HOMOLOG_PREFILTER):
            j = h.alignment.pairs[:, 1]
            lo, hi = max(0, int(j.min()) - flank), int(j.max()) + 1 + flank
            region = h.alignment.target[lo:hi]
            if region not in want and len(want) < max_homologs:
                want.append(region)
        batches.clear()
        got = find_homologs(x, db, max_homologs=max_homologs, flank=flank)
        assert [z.residues for z in got] == want
        assert len(want) == max_homologs
        assert len(batches) == 2 and batches[0] == max_homologs + 2  # a second was needed


def _recorded(monkeypatch) -> list:
    """The prefilter passes from now on: ("scan" or "walk", k) each."""
    from homalign.search import prefilter

    calls: list = []
    walk, scan = prefilter._walk, prefilter._scan
    monkeypatch.setattr(prefilter, "_walk", lambda *a: calls.append(("walk", a[2])) or walk(*a))
    monkeypatch.setattr(prefilter, "_scan", lambda *a: calls.append(("scan", a[2])) or scan(*a))
    return calls


def _regions(found: list) -> list:
    return [[(z.id, z.residues) for z in h] for h in found]


def test_the_homologue_search_scans_its_first_sequences_then_walks_an_index(family, monkeypatch):
    """A database's first ``INDEX_AFTER`` homologue searches in a process scan it (a one-off
    pair never pays for an index), the later ones walk its 4-mer index; the same homologues
    either way, and a repeated sequence comes from the cache."""
    from homalign.search import homologs, prefilter

    db = SequenceDB.from_sequences(list(family["db"]))
    x, y = family["x"], family["y"]
    monkeypatch.setattr(homologs, "INDEX_AFTER", 1)
    homologs._HOMOLOG_CACHE.clear()
    prefilter._RECENT.clear()
    calls = _recorded(monkeypatch)
    got = [find_homologs(s, db, max_homologs=3, flank=5) for s in (x, y, x)]
    assert calls == [("scan", 4), ("walk", 4)]
    assert got[0] and got[0] == got[2]
    homologs._HOMOLOG_CACHE.clear()
    prefilter._RECENT.clear()
    again = [find_homologs(s, db, max_homologs=3, flank=5) for s in (y, x)]
    assert calls[2:] == [("walk", 4), ("walk", 4)]
    assert _regions(again) == _regions([got[1], got[0]])


def test_a_database_past_the_index_limit_is_scanned_to_the_same_homologues(family, monkeypatch):
    """Above ``INDEX_MAX_RESIDUES`` the homologue search scans the database rather than hold its
    4-mer index in memory: the same prefilter scores, so the same homologues."""
    from homalign.search import homologs, prefilter

    seqs = (family["x"], family["y"])
    monkeypatch.setattr(homologs, "INDEX_AFTER", 0)
    calls = _recorded(monkeypatch)
    found = []
    for limit in (10**9, len(family["db"].codes) - 1):
        monkeypatch.setattr(homologs, "INDEX_MAX_RESIDUES", limit)
        homologs._HOMOLOG_CACHE.clear()
        prefilter._RECENT.clear()
        db = SequenceDB.from_sequences(list(family["db"]))
        found.append([find_homologs(s, db, max_homologs=3, flank=5) for s in seqs])
    assert calls == [("walk", 4)] * 2 + [("scan", 4)] * 2
    assert found[0][0] and _regions(found[0]) == _regions(found[1])


def test_learned_with_homologs_is_the_transformed_posterior_decoded(family):
    x, y, db = family["x"], family["y"], family["db"]
    a = homalign.align(x, y, method="learned", homologs=db)
    assert a.extra["homologs"] and all(h.startswith("z/") for h in a.extra["homologs"])
    from homalign.report import format_pair

    assert f"# homologs={len(a.extra['homologs'])} {a.extra['homologs'][0]}" in format_pair(a)
    # recompute by hand: the bundled aligner's posteriors through the found intermediate(s)
    model, _ = load_bundled("learned")
    mode = model.cfg.decode_mode

    def post(u, v):
        return posterior_matrix(*model.score_pair(u.codes, v.codes), mode=mode)

    inter = find_homologs(x, db) + [z for z in find_homologs(y, db)
                                    if z.residues not in {w.residues for w in find_homologs(x, db)}]
    P = consistency_transform(post(x, y), [(post(x, z), post(z, y)) for z in inter])
    np.testing.assert_array_equal(a.pairs, mea_align(P, CONSISTENCY_THRESHOLD).pairs)
    assert len(a.pairs) > 0


def test_no_homologue_found_means_the_sequence_only_posterior(family):
    x, y = family["x"], family["y"]
    plain = homalign.align(x, y, method="learned", threshold=CONSISTENCY_THRESHOLD)
    none = homalign.align(x, y, method="learned", homologs=family["unrelated_db"])
    assert none.extra["homologs"] == []
    np.testing.assert_array_equal(none.pairs, plain.pairs)
    with pytest.raises(ValueError, match="decode='mea'"):
        homalign.align(x, y, method="learned", homologs=family["db"], decode="viterbi")


def test_cli_align_with_homologs(family, tmp_path, capsys):
    x, y = family["x"], family["y"]
    db = tmp_path / "db.fa"
    db.write_text("".join(f">{s.id}\n{s.residues}\n"
                          for s in (family["db"].sequence(k) for k in range(len(family["db"])))))
    (tmp_path / "x.fa").write_text(f">x\n{x.residues}\n")
    (tmp_path / "y.fa").write_text(f">y\n{y.residues}\n")
    out = tmp_path / "out.fa"
    assert main(["align", str(tmp_path / "x.fa"), str(tmp_path / "y.fa"), "--method", "learned",
                 "--homologs", str(db), "--format", "fasta", "-o", str(out)]) == 0
    want = homalign.align(x, y, method="learned", homologs=family["db"])
    rows = [ln for ln in out.read_text().splitlines() if not ln.startswith(">")]
    got = np.array([(i, j) for i, j in _pairs(rows[0], rows[1])])
    np.testing.assert_array_equal(got.reshape(-1, 2), want.pairs)
    assert main(["align", str(tmp_path / "x.fa"), str(tmp_path / "y.fa"), "--method", "sw",
                 "--homologs", str(db)]) != 0
    assert "--method sw does not read --homologs" in capsys.readouterr().err


def _pairs(row_a: str, row_b: str):
    i = j = 0
    for a, b in zip(row_a, row_b, strict=True):
        if a.isalpha() and b.isalpha():
            yield i, j
        i += a.isalpha()
        j += b.isalpha()


def test_learned_homologs_method_reads_its_default_database(family, tmp_path, monkeypatch):
    from homalign.methods.learned import HOMOLOGS_ENV

    db = tmp_path / "db.fa.gz"
    import gzip

    text = "".join(f">{s.id}\n{s.residues}\n"
                   for s in (family["db"].sequence(k) for k in range(len(family["db"]))))
    db.write_bytes(gzip.compress(text.encode()))
    monkeypatch.setenv(HOMOLOGS_ENV, str(db))
    a = homalign.align(family["x"], family["y"], method="learned-homologs")
    b = homalign.align(family["x"], family["y"], method="learned", homologs=family["db"])
    assert a.method == "learned-homologs" and a.extra["homologs"] == b.extra["homologs"]
    np.testing.assert_array_equal(a.pairs, b.pairs)


def test_damaged_gzip_fasta_names_the_file_and_line(tmp_path):
    import gzip

    from homalign.errors import InputError
    from homalign.sequence import read_sequences

    data = gzip.compress("".join(f">s{k}\nMKVLAAGIVGLLLAGCSSHKEE\n" for k in range(5000)).encode())
    bad = tmp_path / "bad.fa.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="damaged gzip data") as err:
        read_sequences(bad)
    assert str(bad) in str(err.value) and ":" in str(err.value)
    good = tmp_path / "good.fa.gz"
    good.write_bytes(data)
    assert len(read_sequences(good)) == 5000


def test_posteriors_against_homologues_are_cached_and_bounded(family, monkeypatch):
    import homalign.methods.learned as L

    L._POSTERIOR_CACHE.clear()
    x, y, db = family["x"], family["y"], family["db"]
    first = homalign.align(x, y, method="learned", homologs=db)
    n = len(L._POSTERIOR_CACHE)
    assert n == 2 * len(first.extra["homologs"])  # P(x~z) and P(y~z) per intermediate
    again = homalign.align(x, y, method="learned", homologs=db)
    assert len(L._POSTERIOR_CACHE) == n
    np.testing.assert_array_equal(again.pairs, first.pairs)
    monkeypatch.setattr(L, "_POSTERIOR_CACHE_BYTES", 1)
    L._POSTERIOR_CACHE.clear()
    bounded = homalign.align(x, y, method="learned", homologs=db)
    assert len(L._POSTERIOR_CACHE) == 1
    np.testing.assert_array_equal(bounded.pairs, first.pairs)


def test_a_learned_homologs_search_ranks_as_learned_and_aligns_through_the_homologues():
    """The same ranking, scores and calibrated E-values as ``learned`` (a self-hit of 59
    residues had E 2.9 under a generic fit of the alignments' scores), the hits aligned as
    ``learned`` with ``homologs=`` aligns them."""
    from homalign import examples

    db = str(examples.path("db.fa"))
    homologs = str(examples.path("homologs.fa"))
    query = next(s for s in homalign.read_sequences(db) if s.id == "d2cqra1")
    ours = homalign.search(query, db, method="learned-homologs", homologs=homologs,
                           max_hits=5)
    plain = homalign.search(query, db, method="learned", homologs=homologs, max_hits=5)
    assert [(h.target_id, h.evalue, h.score) for h in ours] == [
        (h.target_id, h.evalue, h.score) for h in plain]
    assert ours[0].target_id == "d2cqra1" and ours[0].evalue < 1e-10
    assert all(h.alignment.method == "learned-homologs" for h in ours)
    assert [h.alignment.cigar for h in ours] == [h.alignment.cigar for h in plain]

"""Transitive training pairs (homalign.model.data.compose_pairs)."""

import numpy as np
import pytest

from homalign.model.data import TrainPair, compose_pairs, split_by_group


def _pair(name: str, lq: int, lt: int, aligned: list[tuple[int, int]], group: str = "fold:a.1"
          ) -> TrainPair:
    rng = np.random.default_rng(len(name))
    q = rng.integers(0, 20, lq).astype(np.uint8)
    t = rng.integers(0, 20, lt).astype(np.uint8)
    none_q = np.full(lq, -1, dtype=np.int64)
    none_t = np.full(lt, -1, dtype=np.int64)
    return TrainPair(name, group, "tmalign", q, t, np.asarray(aligned, dtype=np.int32),
                     none_q, none_t, none_q, none_t)


def test_composes_through_the_shared_domain():
    # A (6) - B (6): A i <-> B i+1 for i = 0..4; B (6) - C (5): C k <-> B k (the shared domain is
    # the *query* of the second pair, so the composition must orient it).
    ab = _pair("A-B", 6, 6, [(i, i + 1) for i in range(5)])
    bc = _pair("B-C", 6, 5, [(k, k) for k in range(5)])
    out = compose_pairs([ab, bc], min_coverage=0.0)
    assert len(out) == 1
    ac = out[0]
    assert ac.name == "A-C" and ac.source == "transitive" and ac.group == "fold:a.1"
    # B residue j is A's j - 1 and C's j, for j = 1..4
    np.testing.assert_array_equal(ac.pairs, [[0, 1], [1, 2], [2, 3], [3, 4]])
    np.testing.assert_array_equal(ac.q, ab.q)
    np.testing.assert_array_equal(ac.t, bc.t)
    # a valid alignment path: strictly increasing in both sequences
    assert (np.diff(ac.pairs, axis=0) > 0).all()


def test_skips_direct_pairs_other_groups_and_low_coverage():
    ab = _pair("A-B", 10, 10, [(i, i) for i in range(10)])
    bc = _pair("B-C", 10, 10, [(i, i) for i in range(10)])
    ac = _pair("A-C", 10, 10, [(i, i) for i in range(10)])
    assert compose_pairs([ab, bc, ac], min_coverage=0.0) == []  # A-C is already a pair
    bd = _pair("B-D", 10, 10, [(i, i) for i in range(10)], group="fold:b.2")
    assert [p.name for p in compose_pairs([ab, bd], min_coverage=0.0)] == []
    sparse = _pair("B-E", 10, 10, [(0, 0), (5, 5), (9, 9)])
    assert [p.name for p in compose_pairs([ab, sparse], min_coverage=0.0)] == ["A-E"]
    assert compose_pairs([ab, sparse], min_coverage=0.5) == []  # 3 of 10 residues paired


def test_cap_and_bad_names():
    hub = [_pair(f"H-{c}", 8, 8, [(i, i) for i in range(8)]) for c in "PQRST"]
    full = compose_pairs(hub, min_coverage=0.0)
    assert len(full) == 10  # every pair of the hub's five partners
    capped = compose_pairs(hub, min_coverage=0.0, max_pairs=4, seed=3)
    assert len(capped) == 4 and {p.name for p in capped} <= {p.name for p in full}
    with pytest.raises(ValueError, match="not '<A>-<B>'"):
        compose_pairs([_pair("AB", 4, 4, [(0, 0), (1, 1)])])


def test_training_side_composition_never_reaches_the_validation_groups():
    pairs = []
    for g in range(40):
        grp = f"fold:x.{g}"
        pairs += [_pair(f"a{g}-b{g}", 8, 8, [(i, i) for i in range(8)], grp),
                  _pair(f"b{g}-c{g}", 8, 8, [(i, i) for i in range(8)], grp)]
    train, val = split_by_group(pairs, val_fraction=0.25)
    assert train and val
    val_groups = {p.group for p in val}
    composed = compose_pairs(train, min_coverage=0.0)
    assert len(composed) == len(train) // 2
    assert not {p.group for p in composed} & val_groups


def test_several_middles_vote_and_support_filters():
    ident = [(i, i) for i in range(10)]
    pairs = [_pair("A-B1", 10, 10, ident), _pair("B1-C", 10, 10, ident),
             _pair("A-B2", 10, 10, ident), _pair("B2-C", 10, 10, ident),
             _pair("A-B3", 10, 10, ident), _pair("B3-C", 10, 10, [(i, i + 1) for i in range(9)])]
    by_name = {p.name: p for p in compose_pairs(pairs, min_coverage=0.0, support=0.5)}
    # B3 disagrees: A's i -> C's i + 1; two middles out-vote it (A-C also gets A-B3-C's votes)
    np.testing.assert_array_equal(by_name["A-C"].pairs, ident)
    assert "A-C" not in {p.name for p in compose_pairs(pairs, min_coverage=0.0, support=1.0)}
    assert "A-C" not in {p.name for p in compose_pairs(pairs, min_coverage=0.0, min_middles=4)}


def test_votes_that_cross_are_reduced_to_a_valid_path():
    from homalign.model.data import _increasing_subset

    votes = np.array([[0, 0], [1, 5], [2, 2], [3, 3], [4, 1], [5, 6]])
    np.testing.assert_array_equal(_increasing_subset(votes), [[0, 0], [2, 2], [3, 3], [5, 6]])
    assert len(_increasing_subset(votes[:0])) == 0

"""Reference pairs from PIR family alignments (hand-written families and the bundled data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from homalign.alphabet import encode
from homalign.errors import InputError
from homalign.evaluate import bundled_homstrad_dev
from homalign.evaluate.reference import family_pairs, load_reference_pairs

FAMILY = """C; a hand-written family
>P1;alpha
structureX:alpha:1:A:6:A:test::
AC-DEF
G*
>P1;beta
structureX:beta:1:A:6:A:test::
ACWD-FG*
>P1;gamma
structureX:gamma:1:A:5:A:test::
-cw/EFH*
"""


def _write(root: Path, name: str, text: str) -> Path:
    d = root / name
    d.mkdir(parents=True)
    path = d / f"{name}.ali"
    path.write_text(text)
    return path


def test_pairs_of_a_hand_written_family(tmp_path):
    pairs = family_pairs(_write(tmp_path, "fam", FAMILY))
    assert [(p.query.id, p.target.id) for p in pairs] == [
        ("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]
    ab, ag, bg = pairs
    # alpha: A C - D E F G   beta: A C W D - F G   gamma: - c w / E F H
    assert ab.query.residues == "ACDEFG" and ab.target.residues == "ACWDFG"
    np.testing.assert_array_equal(ab.pairs, [(0, 0), (1, 1), (2, 3), (4, 4), (5, 5)])
    assert ab.identity == pytest.approx(1.0)  # A-A C-C D-D F-F G-G
    # lowercase letters are residues; the chain break '/' is a gap
    assert ag.target.residues == "CWEFH"
    np.testing.assert_array_equal(ag.pairs, [(1, 0), (3, 2), (4, 3), (5, 4)])
    assert ag.identity == pytest.approx(3 / 4)  # C-C E-E F-F, G-H
    np.testing.assert_array_equal(bg.pairs, [(1, 0), (2, 1), (4, 3), (5, 4)])
    assert bg.identity == pytest.approx(3 / 4)  # C-C W-W F-F, G-H
    assert ab.n_ref == 5 and ab.family == "fam"
    assert ab.pairs.dtype == np.int32


def test_load_reference_pairs_is_sorted_and_deterministic(tmp_path):
    _write(tmp_path, "zeta", FAMILY)
    _write(tmp_path, "alpha_fam", FAMILY.replace("gamma", "delta"))
    (tmp_path / "not_a_family").mkdir()
    pairs = load_reference_pairs(tmp_path)
    assert [p.family for p in pairs] == ["alpha_fam"] * 3 + ["zeta"] * 3
    again = load_reference_pairs(tmp_path)
    assert [p.key for p in pairs] == [p.key for p in again]


def test_unknown_characters_are_input_errors(tmp_path):
    bad = FAMILY.replace("ACWD-FG*", "AC1D-FG*")
    with pytest.raises(InputError, match=r"bad\.ali"):
        family_pairs(_write(tmp_path, "bad", bad))


def test_selenocysteine_maps_but_keeps_its_letter(tmp_path):
    pairs = family_pairs(_write(tmp_path, "sec", FAMILY.replace("ACWD-FG*", "AUWD-FG*")))
    beta = pairs[0].target
    assert beta.residues == "AUWDFG"
    assert beta.codes[1] == encode("C")[0]  # selenocysteine scores as cysteine


def test_empty_data_dir_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        load_reference_pairs(tmp_path)


def test_bundled_dev_split_pairs():
    pairs = load_reference_pairs(bundled_homstrad_dev())
    assert len(pairs) == 573  # the 80 dev families' member pairs, as the data README states
    assert len({p.family for p in pairs}) == 80
    for p in pairs[:50]:
        assert len(p.pairs) > 0
        assert (np.diff(p.pairs, axis=0) > 0).all()
        assert p.pairs[:, 0].max() < len(p.query) and p.pairs[:, 1].max() < len(p.target)
    identities = np.array([p.identity for p in pairs])
    assert 0.0 < identities.min() and identities.max() <= 1.0
    assert (identities < 0.3).sum() > 100  # mostly remote homologs

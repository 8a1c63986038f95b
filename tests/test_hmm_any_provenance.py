"""HMMER3 models of any provenance for the ``hmm`` method: a default ``hmmbuild`` model (fewer
match states than the query has residues) and the same model with Pfam's header fields."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import homalign
from homalign.evaluate import bundled_homstrad_dev
from homalign.evaluate.reference import read_family
from homalign.profile.pyhmmer_adapter import node_map, read_hmm

FAMILY = "serpin"


def _reference_pairs(row_a: str, row_b: str) -> set[tuple[int, int]]:
    i = j = 0
    out = set()
    for a, b in zip(row_a, row_b, strict=True):
        if a != "-" and b != "-":
            out.add((i, j))
        i += a != "-"
        j += b != "-"
    return out


def _default_hmmbuild(msa_rows: list[tuple[str, str]], tmp_path):
    """``hmmbuild --amino`` with its defaults (symfrac 0.5: gappy columns become inserts); the
    same builder through pyhmmer where the program is not installed."""
    afa = tmp_path / "family.afa"
    afa.write_text("".join(f">{i}\n{row}\n" for i, row in msa_rows))
    out = tmp_path / "family.hmm"
    if shutil.which("hmmbuild"):
        subprocess.run(["hmmbuild", "--amino", "-n", FAMILY, str(out), str(afa)], check=True,
                       capture_output=True)
    else:
        from pyhmmer import easel, plan7

        alphabet = easel.Alphabet.amino()
        with easel.MSAFile(str(afa), digital=True, alphabet=alphabet, format="afa") as fh:
            msa = fh.read()
        msa.name = FAMILY.encode()
        hmm, _, _ = plan7.Builder(alphabet).build_msa(msa, plan7.Background(alphabet))
        with open(out, "wb") as fh:
            hmm.write(fh)
    return out


def _pfamify(path, tmp_path):
    """Pfam's extra header lines (ACC, DESC, gathering/trusted/noise cutoffs, BM/SM)."""
    lines = path.read_text().splitlines()
    k = next(n for n, line in enumerate(lines) if line.startswith("NAME"))
    lines[k + 1:k + 1] = ["ACC   PF00079.24", "DESC  Serpin (serine protease inhibitor)"]
    k = next(n for n, line in enumerate(lines) if line.startswith("CKSUM"))
    lines[k + 1:k + 1] = ["GA    25.00 25.00;", "TC    25.10 25.10;", "NC    24.90 24.90;",
                          "BM    hmmbuild HMM.ann SEED.ann", "SM    hmmsearch -Z 75585367 -E 1000 "
                          "--cpu 4 HMM pfamseq"]
    out = tmp_path / "pfam.hmm"
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.fixture(scope="module")
def family():
    members = read_family(bundled_homstrad_dev() / FAMILY / f"{FAMILY}.ali")
    assert len(members) >= 3
    return members


@pytest.mark.parametrize("pfam", [False, True])
def test_a_default_hmmbuild_model_aligns_with_the_hmm_method(family, tmp_path, pfam):
    (query, qrow), (target, trow) = family[0], family[1]
    path = _default_hmmbuild([(s.id, row) for s, row in family], tmp_path)
    if pfam:
        path = _pfamify(path, tmp_path)
    hmm = read_hmm(path)
    assert hmm.M != len(query), "a default hmmbuild model: gappy columns are inserts"
    if pfam:
        assert hmm.accession in ("PF00079.24", b"PF00079.24") and hmm.cutoffs.gathering_available()
    nodes = node_map(hmm, query)
    placed = nodes[nodes >= 0]
    assert len(placed) > 0.8 * hmm.M and np.all(np.diff(placed) > 0)
    # before: InputError "the HMM has M match states but the query has L residues"
    aln = homalign.align(query, target, method="hmm", query_hmm=str(path))
    pairs = {tuple(p) for p in np.asarray(aln.pairs).tolist()}
    assert aln.score > 0 and len(pairs) > 0.5 * min(len(query), len(target))
    assert all(0 <= i < len(query) and 0 <= j < len(target) for i, j in pairs)
    ref = _reference_pairs(qrow, trow)
    precision = len(pairs & ref) / len(pairs)
    assert precision > 0.6, f"only {precision:.2f} of the pairs are in the HOMSTRAD reference"
    # as good as the model homalign builds from the same MSA (nodes = query residues)
    own = homalign.align(query, target, method="hmm", query_msa=str(tmp_path / "family.afa"))
    own_pairs = {tuple(p) for p in np.asarray(own.pairs).tolist()}
    assert precision >= len(own_pairs & ref) / max(len(own_pairs), 1) - 0.15


def test_a_damaged_or_foreign_model_or_msa_is_an_input_error(tmp_path):
    from homalign import examples
    from homalign.errors import InputError

    c2 = examples.path("C2.hmm").read_text().splitlines(keepends=True)
    node1 = next(k for k, line in enumerate(c2) if line.split()[:1] == ["1"])
    for word in ("nan", "abc"):  # HMMER's parser takes either without a word
        bad = c2.copy()
        fields = bad[node1].split()
        bad[node1] = bad[node1].replace(fields[1], word, 1)
        path = tmp_path / f"{word}.hmm"
        path.write_text("".join(bad))
        with pytest.raises(InputError, match="node 1 are not probabilities"):
            read_hmm(path)
    dna = tmp_path / "dna.hmm"
    from pyhmmer import easel, plan7

    abc = easel.Alphabet.dna()
    seq = easel.TextSequence(name=b"a", sequence="ACGTACGTAGCTAGCATCGATCG").digitize(abc)
    hmm, _, _ = plan7.Builder(abc).build(seq, plan7.Background(abc))
    with open(dna, "wb") as fh:
        hmm.write(fh)
    with pytest.raises(InputError, match="a DNA HMM"):
        read_hmm(dna)
    query, target = (homalign.read_sequences(examples.path(f))[0]
                     for f in ("query.fa", "target.fa"))
    assert homalign.align(query, target, method="hmm",
                          query_hmm=str(examples.path("C2.hmm"))).length > 100
    # a search with the model (its E-value fit scores random pairs without it)
    db = tmp_path / "db.fa"
    db.write_text(f">{target.id}\n{target.residues}\n>other\nHEAGAWGHEEKLMNPQRST\n")
    hits = homalign.search(query, str(db), method="hmm", query_hmm=str(examples.path("C2.hmm")),
                           evalue=10)
    assert hits and hits[0].target_id == target.id and hits[0].alignment.length > 100
    msa = tmp_path / "other.a3m"
    msa.write_text(">x\nMKVLAAGIVG\n>y\nMKVLAAGIVG\n")
    with pytest.raises(InputError, match="first row .* is not the sequence"):
        homalign.align(target, query, method="hmm", query_msa=str(msa))
    with pytest.raises(ValueError, match="both name the query's model"):
        homalign.align(query, target, method="hmm", query_hmm=str(examples.path("C2.hmm")),
                       query_msa=str(msa))
    with pytest.raises(ValueError, match="query_hhm and query_msa both"):
        homalign.align(query, target, method="hhm", query_hhm="q.hhm", query_msa=str(msa))

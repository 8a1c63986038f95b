"""Build the example set shipped in src/homalign/data/examples/ (the README's "Use" section runs on it).

Deterministic (seeded); run from the repository root with the shared data:

    HOMALIGN_DATA=/path/to/shared/data .venv/bin/python scripts/make_examples.py

Sources (all train split, so nothing here is a relative of a dev or held-out protein):

- HOMSTRAD train family C2 (synaptotagmin I 1rsy, PKC-beta 1a25a, PLC-delta1 1djxa): query.fa,
  target.fa, template.fa, template.tem (the family's JOY template, a byte-for-byte copy), C2.hmm
  (pyhmmer's hmmbuild of the family alignment with default settings).
- SCOPe 2.07 ASTRAL 40% (astral-2.07-40.trainval.fa), train folds only (no fold of a
  dev-queries.txt domain): db.fa is every train domain of the three query folds (a.1 globin-like,
  b.7 C2 domain-like, d.109 gelsolin-like) but the two SCOPe queries, plus random train-fold
  domains up to 300; queries.fa is 1rsy and two SCOPe domains (sperm whale myoglobin d1naza_,
  Arabidopsis ADF1 d1f7sa_); homology-queries.txt lists db.fa members the homology benchmark
  can score.
- Debian's mmseqs2-examples UniProt sample (DB.fasta.gz): homologs.fa is the Smith-Waterman hits
  (E <= 1e-3) of query.fa and target.fa in it plus 60 random others.
- configs/toy.toml: train-toy.toml.
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
from pathlib import Path

import homalign
from homalign.evaluate.reference import load_reference_pairs
from homalign.io import read_fasta
from homalign.paths import shared_data_root
from homalign.search import open_database

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/homalign/data/examples"
UNIPROT = Path("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
FAMILY = "C2"
SCOPE_QUERIES = ("d1naza_", "d1f7sa_")
QUERY_FOLDS = ("a.1", "b.7", "d.109")
DB_SIZE = 300
SEED = 2026


def fold(sccs: str) -> str:
    return ".".join(sccs.split(".")[:2])


def wrap(seq: str, width: int = 60) -> str:
    return "\n".join(seq[i:i + width] for i in range(0, len(seq), width))


def write_fasta(path: Path, records: list[tuple[str, str, str]]) -> None:
    path.write_text("".join(f">{i}{(' ' + d) if d else ''}\n{wrap(s)}\n" for i, d, s in records))


def main() -> int:
    data = Path(shared_data_root())
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)

    # HOMSTRAD C2: query, target, template, HMM
    fam_dir = data / "homstrad/train" / FAMILY
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(fam_dir, Path(d) / FAMILY)
        refs = load_reference_pairs(d)
    members = {}
    for r in refs:
        members.setdefault(r.query.id, r.query)
        members.setdefault(r.target.id, r.target)
    q, t, u = members["1rsy"], members["1a25a"], members["1djxa"]
    write_fasta(OUT / "query.fa", [(q.id, "synaptotagmin I C2A domain (HOMSTRAD C2)", q.residues)])
    write_fasta(OUT / "target.fa", [(t.id, "protein kinase C beta C2 domain (HOMSTRAD C2)",
                                     t.residues)])
    write_fasta(OUT / "template.fa", [(t.id, "HOMSTRAD C2", t.residues),
                                      (u.id, "HOMSTRAD C2", u.residues)])
    shutil.copyfile(fam_dir / f"{FAMILY}.tem", OUT / "template.tem")
    build_hmm(fam_dir / f"{FAMILY}.ali", OUT / f"{FAMILY}.hmm")

    # SCOPe: database and queries
    dev = set((data / "scope/dev-queries.txt").read_text().split())
    recs = list(read_fasta(data / "scope/astral-2.07-40.trainval.fa"))
    sccs = {r.id: r.description.split()[0] for r in recs}
    dev_folds = {fold(sccs[i]) for i in dev if i in sccs}
    train = [r for r in recs if fold(sccs[r.id]) not in dev_folds]
    assert not set(QUERY_FOLDS) & dev_folds
    by_id = {r.id: r for r in train}
    core = [r for r in train if fold(sccs[r.id]) in QUERY_FOLDS and r.id not in SCOPE_QUERIES]
    rest = [r for r in train if fold(sccs[r.id]) not in QUERY_FOLDS]
    chosen = core + rng.sample(rest, DB_SIZE - len(core))
    chosen.sort(key=lambda r: (sccs[r.id], r.id))
    write_fasta(OUT / "db.fa", [(r.id, r.description, r.sequence.upper()) for r in chosen])
    write_fasta(OUT / "queries.fa",
                [(q.id, "synaptotagmin I C2A domain (HOMSTRAD C2)", q.residues)]
                + [(i, by_id[i].description, by_id[i].sequence.upper()) for i in SCOPE_QUERIES])
    # homology benchmark queries: db members with a family mate, superfamily members outside the
    # family and fold members outside the superfamily in db.fa (the protocol's scoring rule)
    labels = [sccs[r.id] for r in chosen]
    scoreable = []
    for r in chosen:
        s = sccs[r.id].split(".")
        fam, sf, fo = ".".join(s), ".".join(s[:3]), ".".join(s[:2])
        n_fam = sum(x == fam for x in labels)
        n_sf = sum(x.startswith(sf + ".") for x in labels)
        n_fo = sum(x.startswith(fo + ".") for x in labels)
        if n_fam > 1 and n_sf > n_fam and n_fo > n_sf:
            scoreable.append(r.id)
    picks = [scoreable[i] for i in sorted(rng.sample(range(len(scoreable)), 6))]
    (OUT / "homology-queries.txt").write_text("".join(f"{i}\n" for i in picks))

    # homologue set from the UniProt sample
    db = open_database(UNIPROT)
    hit_ids: list[str] = []
    for s in (q, t):
        for h in homalign.search(s, db, method="sw", evalue=1e-3, max_hits=40):
            if h.target_id not in hit_ids:
                hit_ids.append(h.target_id)
    uni = list(read_fasta(UNIPROT))
    others = [r for r in uni if r.id not in hit_ids and len(r.sequence) <= 600]
    pick = {r.id for r in rng.sample(others, 60)} | set(hit_ids)
    write_fasta(OUT / "homologs.fa", [(r.id, r.description, r.sequence) for r in uni
                                      if r.id in pick])
    shutil.copyfile(ROOT / "configs/toy.toml", OUT / "train-toy.toml")
    print(f"{OUT}: {len(chosen)} db domains ({len(core)} in the query folds), "
          f"{len(hit_ids)} + 60 homologues, homology queries {picks}")
    return 0


def build_hmm(ali: Path, out: Path) -> None:
    """hmmbuild (pyhmmer, default settings) of a HOMSTRAD PIR family alignment."""
    import pyhmmer

    from homalign.io.pir import read_pir

    rows = read_pir(ali)
    names = [r.id.encode() for r in rows]
    seqs = [r.aligned.upper() for r in rows]
    alphabet = pyhmmer.easel.Alphabet.amino()
    msa = pyhmmer.easel.TextMSA(name=ali.stem.encode(), sequences=[
        pyhmmer.easel.TextSequence(name=n, sequence=s) for n, s in zip(names, seqs, strict=True)])
    builder = pyhmmer.plan7.Builder(alphabet)
    background = pyhmmer.plan7.Background(alphabet)
    hmm, _, _ = builder.build_msa(msa.digitize(alphabet), background)
    with open(out, "wb") as fh:
        hmm.write(fh)


if __name__ == "__main__":
    sys.exit(main())

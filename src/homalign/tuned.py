"""Every shipped setting that was chosen by measurement, by method, with where it was measured.

One table for the whole package: each entry names the live value (a module constant
``"module:NAME"`` or a method's option default ``"method:NAME.option"``), the value it was chosen
at, the data it was chosen on and the script that measured it, and the decision in
docs/decisions.md. tests/test_tuned.py checks that every live value still equals the recorded one,
so a retune changes both or fails. Splits are held-out *train* families, folds or queries unless
an entry says dev; "published" values are copied from the tool that defines them, not tuned here.

The constants stay beside the code that uses them (search/engine.py's ``LEARNED_RESCORE`` ...);
this module imports nothing and nothing imports it at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tuned:
    """One chosen setting: where it lives, its value, and how it was chosen."""

    where: str
    value: Any
    split: str
    script: str
    decision: str = ""


_HELDOUT_QUERIES = "held-out train-fold SCOPe queries (homalign.scop.is_heldout_fold; never dev)"
_HELDOUT_PAIRS = "held-out HOMSTRAD train families / TM-align train folds (8%, never dev)"
_NB_RUN = ("homalign benchmark homology --db NB.db --queries HELDOUT.txt --methods learned "
           "--no-profile-round, NB.db from makedb --neighbours, the constants set in-process")
_PROFILE_PAIRS = "150 HOMSTRAD train pairs"
_PROFILE_SCRIPT = ("benchmarks/bench_profile.py compare --data $HOMALIGN_DATA/homstrad/train "
                   "(52daf1a, 9a35b36; the exact command is not recorded)")

#: method -> its tuned settings
TUNED: dict[str, tuple[Tuned, ...]] = {
    "sw / nw / glocal": (
        Tuned("method:sw.gap_open", 11.0, "published", "BLAST+ blastp defaults (BLOSUM62 11/1)"),
        Tuned("method:sw.gap_extend", 1.0, "published", "BLAST+ blastp defaults (BLOSUM62 11/1)"),
    ),
    "profile methods (pssm, compass, prof-sim, hhm, hhm-mac)": (
        Tuned("method:prof-sim.scale", 48.0, _PROFILE_PAIRS, _PROFILE_SCRIPT,
              "Profile defaults chosen on 150 HOMSTRAD train pairs"),
        Tuned("method:prof-sim.shift", 0.4, _PROFILE_PAIRS, _PROFILE_SCRIPT,
              "Profile defaults chosen on 150 HOMSTRAD train pairs"),
        Tuned("method:hhm.gap_weight", 0.4, _PROFILE_PAIRS, _PROFILE_SCRIPT,
              "Profile defaults chosen on 150 HOMSTRAD train pairs"),
        Tuned("homalign.methods.profile:AUTO_SHIFT", 0.6,
              f"{_PROFILE_PAIRS} (single sequences); the Neff dependence of 'auto' partly on 150 "
              "HOMSTRAD dev pairs", _PROFILE_SCRIPT,
              "hhm-mac's hh_shift='auto' and mact=0.35 were partly tuned on 150 dev pairs"),
        Tuned("method:hhm-mac.mact", 0.35, "partly 150 HOMSTRAD dev pairs (dev numbers optimistic)",
              _PROFILE_SCRIPT,
              "hhm-mac's hh_shift='auto' and mact=0.35 were partly tuned on 150 dev pairs"),
        Tuned("homalign.profile.pseudocounts:PSIBLAST_BETA", 10.0, "published",
              "PSI-BLAST's pseudocount weight beta"),
        Tuned("homalign.profile.pseudocounts:HHSUITE_TAU", (1.0, 1.5, 1.0), "published",
              "HH-suite's pca, pcb, pcc"),
        Tuned("homalign.profile.profile:GAP_PRIOR_WEIGHT", 5.0, "not tuned: a weak prior set by "
              "hand", "none (88297da)"),
        Tuned("homalign.profile.profile:GAP_PRIOR_RATE", 0.05, "not tuned: a weak prior set by "
              "hand", "none (88297da)"),
    ),
    "iterative search (pssm@N, learned@N) and its MSAs": (
        Tuned("homalign.search.msa_build:DEFAULT_INCLUSION_EVALUE", 1e-3, "published",
              "PSI-BLAST's and jackhmmer's inclusion threshold"),
        Tuned("homalign.search.msa_build:DEFAULT_MAX_CANDIDATES", 300,
              "time only: one ASTRAL query took 14.4 s before the cap", "none (timing)",
              "build_msa passes at most 300 prefilter candidates per inclusion round"),
        Tuned("homalign.search.iterative:DEFAULT_FUSION_WEIGHT", 0.5,
              f"40 and 100 {_HELDOUT_QUERIES}", "benchmarks/research/learned_msa_tune.py",
              "learned@3: fuse, don't replace"),
        Tuned("homalign.search.iterative:PROFILE_SEEDS", True,
              f"563 {_HELDOUT_QUERIES}: learned@3 superfamily / family 0.1282 / 0.4761 -> "
              "0.1316 / 0.4816, pssm@3 0.1111 / 0.4199 -> 0.1145 / 0.4262, ~6% more time "
              "(every round seeded by its PSSM: 0.1323 / 0.4814 for ~21%)",
              "benchmarks/research/fusion_depth_tune.py --seeds",
              "What the rounds score"),
        Tuned("homalign.search.iterative:SW_CANDIDATES", True,
              f"563 {_HELDOUT_QUERIES}, end to end: the MSA rounds' candidates the database's "
              "best 300 by SW instead of the k-mer prefilter's: learned@3 superfamily / family "
              "0.1408 / 0.4948 at 137 ms -> 0.1419 / 0.4962 at 117 ms, pssm@3 0.1145 / 0.4262 "
              "-> 0.1151 / 0.4271 at 70 ms both",
              "benchmarks/research/fusion_depth_tune.py --end-to-end 200 --methods pssm,learned "
              "--msa-candidates kmer,sw",
              "What the rounds score"),
        Tuned("homalign.search.iterative:FUSION_RESCORE", 200,
              f"563 {_HELDOUT_QUERIES}, learned@3 end to end with PSSM seeds: superfamily / "
              "family 0.1408 / 0.4948 at 134 ms a query with the PSSM round's best 200 and the "
              "best 80 by SW, 0.1408 / 0.4942 at 149 ms with 300, 0.1406 / 0.4884 at 123 ms "
              "with 150 (before the seeds: all ~1,000 candidates no better than 300)",
              "benchmarks/research/fusion_depth_tune.py --end-to-end 300,200,150",
              "What the rounds score"),
    ),
    "MSA-database round (--target-msa)": (
        Tuned("homalign.search.iterative:PROFILE_DB_OPTIONS", {"hh_shift": -0.03},
              _HELDOUT_QUERIES, "benchmarks/research/msadb_tune.py",
              "The database round's settings, each chosen on held-out queries"),
        Tuned("homalign.search.iterative:MSADB_FUSION_WEIGHTS", (0.25, 0.25, 0.5),
              _HELDOUT_QUERIES, "benchmarks/research/msadb_tune.py",
              "The database round's settings, each chosen on held-out queries"),
        Tuned("homalign.search.msadb:NEIGHBOUR_SUPPORT", 2.0, _HELDOUT_QUERIES,
              "benchmarks/research/msadb_extend.py",
              "Neighbour support (exponent 2) is on by default for the fused ranking"),
    ),
    "learned (align)": (
        Tuned("homalign.methods.learned:MAX_HOMOLOGS", 4, _HELDOUT_PAIRS,
              "benchmarks/research/learned_consistency_heldout.py",
              "Consistency through database homologues"),
        Tuned("homalign.methods.learned:HOMOLOG_EVALUE", 1e-3, _HELDOUT_PAIRS,
              "benchmarks/research/learned_consistency_heldout.py",
              "Consistency through database homologues"),
        Tuned("homalign.methods.learned:HOMOLOG_FLANK", 30, _HELDOUT_PAIRS,
              "benchmarks/research/learned_consistency_heldout.py",
              "Consistency through database homologues"),
        Tuned("homalign.model.consistency:CONSISTENCY_THRESHOLD", 0.2,
              f"{_HELDOUT_PAIRS} (0.15-0.2 best)",
              "benchmarks/research/learned_consistency_heldout.py",
              "Consistency through database homologues"),
        Tuned("homalign.search.homologs:HOMOLOG_PREFILTER",
              {"k": 4, "threshold": 20.0, "max_seqs": 20, "two_hit": False, "xdrop": 10.0,
               "index": True},
              f"{_HELDOUT_PAIRS}: pooled F1 / twilight 0.8255 / 0.6992 vs 0.8256 / 0.6994 for "
              "the 3-mer scan (neighbourhood 15, 50 candidates) and 0.8265 / 0.7014 with the "
              "search default (11, 1,000); two hits at k = 4: 0.8234 / 0.6946",
              "benchmarks/research/learned_consistency_heldout.py --max-homologs 4 "
              "--thresholds 0.2 --prefilter k=4,threshold=20,max_seqs=20,two_hit=false,"
              "xdrop=10,index=true (and k=4 at 18/22, two hits, xdrop 20, 50 candidates; "
              "k=5 at 22/25)",
              "The homologue search walks a 4-mer index"),
    ),
    "learned (search)": (
        Tuned("homalign.search.engine:LEARNED_RESCORE", 80,
              f"563 {_HELDOUT_QUERIES}: the database's best 80 by SW, superfamily / family "
              "0.1188 / 0.4494 at 28.6 ms a query (100: 0.1181 / 0.4505 at 29.6; 120: 0.1191 / "
              "0.4526 at 35.7; the k-mer prefilter's best 80: 0.1142 / 0.4411 at 41.2)",
              "benchmarks/research/search_depth_tune.py --settings sw:-:80,sw:-:100,sw:-:120,"
              "11:1000:80",
              "The learned search's candidates are the database's best 80 by SW score"),
        Tuned("homalign.search.engine:UNGAPPED_CANDIDATES", 1000,
              f"563 {_HELDOUT_QUERIES}: superfamily / family 0.1188 / 0.4494 (SW of every "
              "target) -> 0.1183 / 0.4528 (500: 0.1164 / 0.4521; 2,000: 0.1169 / 0.4489) at "
              "33.5-35.1 -> 29.5-31.6 ms a query; learned@3 0.1419 / 0.4962 -> 0.1403 / "
              "0.4978, pssm@3 0.1151 / 0.4271 either way",
              "benchmarks/research/search_depth_tune.py --settings sw:-:80 --ungapped "
              "1000,500,2000,0; benchmarks/research/fusion_depth_tune.py --end-to-end 200 "
              "--methods learned,pssm --ungapped 1000,0",
              "The learned search's candidates are the database's best 80 by SW score"),
        Tuned("homalign.search.engine:CANDIDATE_SW", ("BLOSUM45", 14.0, 2.0),
              f"563 {_HELDOUT_QUERIES} (210 scored): family / superfamily 0.473 / 0.121 "
              "(BLOSUM62 11/1) -> 0.492 / 0.120, family +0.019 (bootstrap 95% +0.006 .. "
              "+0.035), superfamily -0.001 (-0.004 .. +0.002); BLOSUM45 15/2 0.487 / 0.119, "
              "BLOSUM45 16/2 0.474 / 0.119, 18/1 0.482 / 0.121, PAM250 14/2 0.461 / 0.118, "
              "BLOSUM62 9/2 0.475 / 0.119 (the best of seven: part of the gain may be the choice; "
              "dev, once: family 0.585 -> 0.587), the ungapped pass with BLOSUM45 too 0.486 / "
              "0.119; "
              "learned@3 0.508 / 0.144 -> 0.507 / 0.143, pssm@3 "
              "0.427 / 0.115 -> 0.426 / 0.115; other-fold hits at E <= 1 0.533 -> 0.554 a query",
              "benchmarks/research/candidate_sw_tune.py --settings BLOSUM62:11:1,BLOSUM45:14:2,"
              "BLOSUM45:15:2,BLOSUM45:16:2,BLOSUM45:18:1,PAM250:14:2,BLOSUM62:9:2",
              "The learned search's candidates are the database's best 80 by SW score"),
        Tuned("homalign.search.profile_round:PSSM_CANDIDATES", 300,
              f"563 {_HELDOUT_QUERIES} (210 scored): superfamily / family 0.1197 / 0.4919 "
              "(learned) -> 0.1331 / 0.4988 (bootstrap 95% superfamily +0.007 .. +0.021) at "
              "1.45x learned's time (the MSA's round by SW instead of the query's one-sequence "
              "PSSM, as shipped: 0.1328 / 0.4984, ~3 ms a query less); the PSSM over the 80 learned candidates only 0.1275 / 0.4982 "
              "(1.26x), over the best 1,000 0.1284 / 0.4987 (1.6x), with 40 extra 0.1352 / "
              "0.5001 (1.7x); over the best 150 (20 extra) 0.1299 / 0.4967, the best 200 with "
              "10 extra 0.1308 / 0.4976, at 0.97x / 0.91x the time of 300 / 20 in one run",
              "benchmarks/research/profile_round_tune.py --settings 300:20:1e-3:0.5,"
              "80:0:1e-3:0.5,1000:0:1e-3:0.5,1000:40:1e-3:0.5,150:20:1e-3:0.5,200:10:1e-3:0.5",
              "A learned search fuses its ranking with one light PSSM round by default"),
        Tuned("homalign.search.profile_round:EXTRA_CANDIDATES", 20,
              f"563 {_HELDOUT_QUERIES}: superfamily 0.1284 (none, PSSM over 1,000) -> 0.1341 "
              "(20, 1.8x learned's time) -> 0.1352 (40, 1.7x); over the best 300: 0.1331 (20, "
              "1.45x), 0.1342 (40, 1.5x)",
              "benchmarks/research/profile_round_tune.py --settings 1000:0:1e-3:0.5,"
              "1000:20:1e-3:0.5,1000:40:1e-3:0.5,300:20:1e-3:0.5,300:40:1e-3:0.5",
              "A learned search fuses its ranking with one light PSSM round by default"),
        Tuned("homalign.search.profile_round:INCLUSION_EVALUE", 1e-3,
              f"563 {_HELDOUT_QUERIES}: PSI-BLAST's inclusion E-value; 1e-2 within noise "
              "(superfamily 0.1343 against 0.1331 at 300 / 20)",
              "benchmarks/research/profile_round_tune.py --settings 300:20:1e-3:0.5,"
              "300:20:1e-2:0.5",
              "A learned search fuses its ranking with one light PSSM round by default"),
        Tuned("homalign.search.profile_round:WEIGHT", 0.5,
              f"563 {_HELDOUT_QUERIES} (PSSM over the 80 learned candidates): superfamily / "
              "family 0.1275 / 0.4982 at 0.5, 0.1258 / 0.4959 at 0.7, 0.1261 / 0.4823 at 0.4",
              "benchmarks/research/profile_round_tune.py --settings 80:0:1e-3:0.5,80:0:1e-3:0.7,"
              "80:0:1e-3:0.4",
              "A learned search fuses its ranking with one light PSSM round by default"),
        Tuned("homalign.search.engine:REVERSE_MARGIN", 3.0,
              f"563 {_HELDOUT_QUERIES} and 180 shuffled UniProt decoys against the 20,000 "
              "UniProt sample: superfamily / family unchanged (0.1197 / 0.4920 without the "
              "round, 0.1342 / 0.4954 with it) at margins 2, 3 and 4 (checks at E <= 1 and 10); "
              "other-fold hits at E <= 0.1 0.028 -> 0.004 a query; decoy hits at E <= 1e-3 "
              "0.0056 -> 0 a query (no round)",
              "homalign benchmark homology --db TV.db --queries HELDOUT.txt --methods learned "
              "[--no-profile-round], the constants set in-process; benchmarks/"
              "evalue_calibration.py --decoy-hits",
              "The reverse null guards strong learned and PSSM-round hits"),
        Tuned("homalign.search.engine:REVERSE_CHECK", 1.0,
              f"563 {_HELDOUT_QUERIES}: sensitivities unchanged at 1 and 10; 10 scores 3x as "
              "many reversed targets",
              "as REVERSE_MARGIN",
              "The reverse null guards strong learned and PSSM-round hits"),
        Tuned("homalign.search.engine:REVERSE_GATE", 2.0,
              f"563 {_HELDOUT_QUERIES}: the same lists as without the gate at a third of the "
              "reversed targets (2.9 against 9.2 a query); decoy hits unchanged at every E-value "
              "threshold to 1e-2",
              "as REVERSE_MARGIN",
              "The reverse null guards strong learned and PSSM-round hits"),
        Tuned("homalign.search.profile_round:REVERSE_MARGIN", 5.0,
              f"563 {_HELDOUT_QUERIES}: superfamily / family 0.1342 / 0.4954 without it, "
              "0.1337 / 0.4960 at 3 (7 queries lower, 2 higher), 0.1339 / 0.4960 at 4, "
              "0.1341 / 0.4954 at 5, unchanged at 8; decoy hits at E <= 1e-3 0.022 -> 0 a "
              "query at 3, 4 and 5",
              "as engine REVERSE_MARGIN",
              "The reverse null guards strong learned and PSSM-round hits"),
        Tuned("homalign.search.engine:LINK_EVALUE", 1e-2,
              f"563 {_HELDOUT_QUERIES}, E-values counting chance hits over the database's "
              "lengths (2026-12-07): superfamily / family 0.120 / 0.492 without lists, "
              "0.123 / 0.504 at link 1e-2, 0.122 / 0.498 at 1e-3 and 0.121 / 0.498 at 1e-4 "
              "(penalty 100, lists cut at 0.1); other-fold hits at E <= 1 unchanged (0.218)",
              "benchmarks/evalue_calibration.py (the hit lists of: " + _NB_RUN + ")",
              "Intermediate-sequence search"),
        Tuned("homalign.search.engine:PATH_PENALTY", 100.0,
              f"563 {_HELDOUT_QUERIES}: penalty 30 the same as 100 at link 1e-3 (2026-12-07); "
              "penalty 10 at link 1e-2 gave 2.7x the other-fold hits at E <= 1e-3 "
              "(2026-12-02)",
              "benchmarks/evalue_calibration.py (the hit lists of: " + _NB_RUN + ")",
              "Intermediate-sequence search"),
        Tuned("homalign.search.neighbours_build:NEIGHBOUR_EVALUE", 0.1,
              f"563 {_HELDOUT_QUERIES}: lists cut at 1e-2 hold 3.4 links a sequence and lift "
              "superfamily / family only to 0.120 / 0.498 (link 1e-4 to 1e-3); at 0.1, 6.6 "
              "links a sequence, see LINK_EVALUE",
              "benchmarks/evalue_calibration.py (the hit lists of: " + _NB_RUN + ")",
              "Intermediate-sequence search"),
        Tuned("homalign.search.neighbours_build:MAX_NEIGHBOURS", 50, "not tuned: a list size cap",
              "none", "Intermediate-sequence search"),
    ),
    "splits": (
        Tuned("homalign.scop:HELDOUT_FOLD_FRACTION", 0.08, "the split itself (crc32 of the fold)",
              "none", "Model selection uses held-out train pairs only"),
    ),
}


def entries() -> list[Tuned]:
    """Every entry of :data:`TUNED`, in table order."""
    return [t for group in TUNED.values() for t in group]


__all__ = ["TUNED", "Tuned", "entries"]

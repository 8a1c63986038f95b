"""Where a learned search query's time goes: each stage's function timed in place.

    python benchmarks/research/search_stages.py --db TRAINVAL.db --queries Q.fa
    NUMBA_CPU_NAME=haswell python benchmarks/research/search_stages.py ... --avx2   # an AVX2 host

One thread (numba, BLAS), every query through ``homalign.search`` (tracebacks of the hits with
E <= 10) after one warm-up query; prints milliseconds a query for the Smith-Waterman stage, the
batched learned ranking and its parts (its 20 extra targets included), the profile round's MSA
and PSSM pass, and the tracebacks' parts. The stages nest (``scores``
holds ``bilinear_exp``; the ranking holds ``scores``), so the rows do not add up.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from typing import Any

STAGES = [("homalign.search.engine", None, "best_by_sw", "candidates: ungapped, then SW"),
          ("homalign.search.engine", None, "ungapped_scores", "  ungapped, every target"),
          ("homalign.search.engine", None, "sw_scores", "  SW of the best 1,000"),
          ("homalign.search.engine", None, "_batched_scores", "learned ranking"),
          ("homalign.search.profile_round", None, "pssm_round", "profile round: SW MSA, PSSM pass"),
          ("homalign.model.ranking", "RankingModel", "scores", "  ranking scores"),
          ("homalign.model.ranking", None, "bilinear_exp", "    A E^T and exp"),
          ("homalign.model.ranking", None, "local_forward_batch", "    16-lane forward"),
          ("homalign.model.ranking", "RankingModel", "gap_costs", "    targets' gap costs"),
          ("homalign.model.ranking", "RankingModel", "query", "  query side"),
          ("homalign.search.embeddings", "EmbeddingStore", "gather", "  stored embeddings"),
          ("homalign.model.inference", "InferenceAligner", "embed_many", "tracebacks: encoder"),
          ("homalign.model.inference", "InferenceAligner", "score_many", "tracebacks: scores"),
          ("homalign.methods.learned", None, "_posteriors_of", "tracebacks: posteriors"),
          ("homalign.model.decode", None, "mea_align", "tracebacks: MEA paths"),
          ("homalign.dp.batch", None, "align_batch", "tracebacks: local scores")]


def _wrap(owner: Any, name: str, label: str, acc: collections.Counter) -> None:
    f = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            acc[label] += time.perf_counter() - start

    setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> int:
    import importlib

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="homalign makedb directory")
    p.add_argument("--queries", required=True, help="FASTA file of queries")
    p.add_argument("--avx2", action="store_true",
                   help="the kernels an AVX2-only host runs (int8 SW on 32 lanes, no int16 "
                        "lanes); with NUMBA_CPU_NAME=haswell the code is compiled for one")
    args = p.parse_args(argv)
    if args.avx2:
        from homalign.dp import lanes_int

        lanes_int.AVAILABLE, lanes_int.AVAILABLE8 = False, False
        lanes_int.INT8_LANES = lanes_int.LANES8 // 2
    from homalign.threads import set_threads

    set_threads(1)
    import homalign
    from homalign.search import open_database
    from homalign.sequence import read_sequences

    acc: collections.Counter = collections.Counter()
    for module, cls, name, label in STAGES:
        owner = importlib.import_module(module)
        _wrap(getattr(owner, cls) if cls else owner, name, label, acc)
    db = open_database(args.db)
    queries = list(read_sequences(args.queries))
    homalign.search(queries[0], db, method="learned", evalue=10)  # warm-up
    acc.clear()
    start = time.perf_counter()
    for q in queries[1:]:
        homalign.search(q, db, method="learned", evalue=10)
    n = max(len(queries) - 1, 1)
    print(f"{'whole query':40s} {1000 * (time.perf_counter() - start) / n:7.1f} ms")
    for *_, label in STAGES:
        print(f"{label:40s} {1000 * acc[label] / n:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

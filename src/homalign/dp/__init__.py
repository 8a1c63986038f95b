"""Exact dynamic-programming alignment (knows nothing about proteins).

Public API::

    from homalign.dp import GapCosts, DPResult, align, align_score, align_batch
    gaps = GapCosts.uniform(Lq, Lt, open=11.0, extend=1.0)
    res = align(S, gaps, mode="local")       # S: float32 (Lq, Lt)
    s = align_score(S, gaps, mode="local")   # linear memory, no traceback

Conventions:

* Scores: ``S[i, j]`` is added for the pair (query i, target j); gap costs (:class:`GapCosts`)
  are subtracted. A gap of length k costs ``open + k * extend`` (BLAST convention: 11/1 charges
  12 for a one-residue gap; parasail's and Biopython's "open" is our ``open + extend``).
* Modes (:mod:`homalign.dp.modes`): ``local``, ``global``, ``glocal``, ``semiglobal``. In local
  mode the empty alignment scores 0 and non-empty alignments begin and end with a pair.
* Arithmetic: float32, accumulated in float32 (exact for integer-valued inputs).
  ``align_score`` and ``align(...).score`` are bit-identical whatever kernel runs.
* Kernels (:mod:`homalign.dp.kernels`, numba): ``align`` runs the general three-state kernel
  (row passes, all but the D recurrence vectorisable) with a uint8 code per cell that packs the
  traceback pointers of the three states (see the kernels module).
  ``align_score`` (linear memory) picks: constant integer costs and integer-valued S (|partial
  scores| < 2**24) -> ``score_integral`` (the D recurrence as a running maximum); other constant
  costs with go >= ge >= 0 -> ``score_constant`` (row pairs); position-specific non-negative
  costs -> ``score_general`` (two rows); anything else (negative costs) -> the three-state kernel.
  ``align_batch`` runs the same kernels in a ``prange`` over pairs (tracebacks 16 pairs at a
  time, :mod:`homalign.dp.trace_lanes`); ``align_codes`` takes code sequences and a plain matrix
  instead of score matrices, as parasail does, and gives ``align_batch``'s results.
* Scores may contain -inf (a pair that may not be aligned); NaN and +inf are rejected.
* Tie-breaking (deterministic): at every cell the predecessor is chosen in the order begin (start
  the alignment here), M, I, D; the end cell is the first best one in row-major order, states in
  the order begin, M, I, D. In local mode a prefix scoring <= 0 is dropped and the empty
  alignment wins a tie at 0.
* I-D adjacency is allowed (a gap in one sequence may directly follow one in the other).

Posteriors (forward-backward over the same model and alignments), the log partition function and
maximum-accuracy (MAC) decoding are in :mod:`homalign.dp.posterior`; the posteriors of one query
against many targets, 16 at a time, in :mod:`homalign.dp.posterior_batch`.
"""

from homalign.dp.batch import align_batch, align_codes
from homalign.dp.gaps import GapCosts
from homalign.dp.modes import MODES
from homalign.dp.pairwise import align, align_score
from homalign.dp.result import DPResult

__all__ = ["GapCosts", "DPResult", "MODES", "align", "align_score", "align_batch", "align_codes"]

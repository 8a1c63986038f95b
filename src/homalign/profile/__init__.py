"""Evolutionary profiles and profile HMMs built from MSAs (PSI-BLAST, HMMER and HH-suite classes).

Public API: :class:`Profile` (frequencies, log-odds PSSM, Neff, gap statistics),
:class:`ProfileHMM` (match/insert/delete transitions), :func:`henikoff_weights`,
:func:`add_pseudocounts`, PSSM and ``.hhm`` readers/writers, the pyhmmer adapter and
:func:`build_msa` (iterative search).
"""

from homalign.profile.profile import Profile, encode_rows
from homalign.profile.pseudocounts import add_pseudocounts, dirichlet_mixture, matrix_pseudocounts
from homalign.profile.sequence_weights import column_neff, henikoff_weights, msa_neff

__all__ = [
    "Profile", "add_pseudocounts", "column_neff", "dirichlet_mixture", "encode_rows",
    "henikoff_weights", "matrix_pseudocounts", "msa_neff",
]

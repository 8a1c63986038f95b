"""File formats: the only part of homalign that parses text.

Readers raise :class:`homalign.errors.InputError` naming file, line and record; writers go
through :func:`homalign.io.atomic.atomic_write` (temp file, fsync, rename). This package
imports nothing of homalign's except :mod:`homalign.errors`.

Modules: :mod:`~homalign.io.atomic`, :mod:`~homalign.io.fasta`, :mod:`~homalign.io.msa`
(MSA type, aligned FASTA, A3M), :mod:`~homalign.io.stockholm`, :mod:`~homalign.io.pir`
(HOMSTRAD ``.ali``/``.tem``), :mod:`~homalign.io.blast_tab`, :mod:`~homalign.io.tmalign`.
"""

from homalign.io.atomic import atomic_write
from homalign.io.blast_tab import (
    BLAST_TAB_COLUMNS,
    EXTRA_COLUMNS,
    TabularHit,
    format_bitscore,
    format_evalue,
    read_blast_tab,
    write_blast_tab,
)
from homalign.io.fasta import FastaRecord, read_fasta, write_fasta
from homalign.io.msa import MSA, read_a3m, read_aligned_fasta, write_a3m, write_aligned_fasta
from homalign.io.pir import PirEntry, pir_to_msa, read_pir, read_tem, write_pir
from homalign.io.stockholm import iter_stockholm, read_stockholm, write_stockholm
from homalign.io.tmalign import TMALIGN_COLUMNS, TMAlignPair, cigar_pairs, read_tmalign_pairs

__all__ = [
    "BLAST_TAB_COLUMNS",
    "EXTRA_COLUMNS",
    "MSA",
    "TMALIGN_COLUMNS",
    "FastaRecord",
    "PirEntry",
    "TMAlignPair",
    "TabularHit",
    "atomic_write",
    "cigar_pairs",
    "format_bitscore",
    "format_evalue",
    "iter_stockholm",
    "pir_to_msa",
    "read_a3m",
    "read_aligned_fasta",
    "read_blast_tab",
    "read_fasta",
    "read_pir",
    "read_stockholm",
    "read_tem",
    "read_tmalign_pairs",
    "write_a3m",
    "write_aligned_fasta",
    "write_blast_tab",
    "write_fasta",
    "write_pir",
    "write_stockholm",
]

"""File formats: the only part of homalign that parses text.

Readers raise :class:`homalign.errors.InputError` naming file, line and record; writers go
through :func:`homalign.io.atomic.atomic_write` (temp file, fsync, rename). This package
imports nothing of homalign's except :mod:`homalign.errors`.
"""

from homalign.io.atomic import atomic_write
from homalign.io.fasta import FastaRecord, read_fasta, write_fasta
from homalign.io.msa import MSA, read_a3m, read_aligned_fasta, write_a3m, write_aligned_fasta
from homalign.io.pir import PirEntry, pir_to_msa, read_pir, read_tem, write_pir

__all__ = [
    "MSA",
    "FastaRecord",
    "PirEntry",
    "atomic_write",
    "pir_to_msa",
    "read_a3m",
    "read_aligned_fasta",
    "read_fasta",
    "read_pir",
    "read_tem",
    "write_a3m",
    "write_aligned_fasta",
    "write_fasta",
    "write_pir",
]

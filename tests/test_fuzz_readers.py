"""Every text reader under property-based fuzzing (hypothesis).

For any bytes — random, built from the format's own tokens, or a valid file with a few edits —
a reader either returns its records or raises the project's :class:`InputError` (naming the
file), within a time bound (hypothesis ``deadline``) and a memory bound (``tracemalloc`` peak).
Inputs are small (``max_size``), so a reader that allocates or loops by a number it read rather
than by the input's size fails the bounds.
"""

from __future__ import annotations

import atexit
import gzip
import re
import shutil
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homalign.errors import InputError

MAX_BYTES = 1500
PEAK_BYTES = 64 * 2**20
FUZZ = settings(max_examples=250, deadline=2000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- valid samples of each format (the mutation strategy edits these) ------------------------

FASTA = b">q1 first protein\nMKVLAAGIVG\nLLLAGCS\n>q2\nMRVLSAGIVGLL*\n"
A3M = b">q\nMKVLAAGIVG\n>h1 desc\nMK-LAaaAGIVG\n>h2\n--VLAAGIVGc\n"
ALIGNED = b">q\nMKVLAAGIVG\n>h1\nMK-LAAGIVG\n>h2\n--VLAAGIV-\n"
STOCKHOLM = (b"# STOCKHOLM 1.0\n#=GF ID fam\nq   MKVLA.AGIVG\nh1  MK-LAaAGIVG\n"
             b"#=GC RF xxxxx.xxxxx\n//\n")
PIR = (b"C; a comment\n>P1;1abc\nstructureX:1abc:1:A:10:A:::-1.00:-1.00\nMKVLA-AG/IVG*\n"
       b">P1;2xyz\nsequence\nMRV-AGAGAIVG*\n")
TEM = (b">P1;1abc\nsequence\nMKVLA-AGIV*\n>P1;1abc\nsecondary structure and phi angle\n"
       b"CCHHH-HHCC*\n>P1;1abc\nsolvent accessibility\nTTFFT-FFTT*\n")
TMALIGN = (b"query\ttarget\tquery_sccs\ttarget_sccs\ttm1\ttm2\ttm3\trmsd\taligned\tcigar\t"
           b"query_seq\ttarget_seq\n"
           b"d1a\td1b\ta.1.1.1\ta.1.1.2\t0.7\t0.7\t0.7\t1.5\t4\t2P1D2M1I\tMKVLA\tMKVLA\n")
BLAST_TAB = (b"q1\tt1\t45.500\t20\t10\t1\t1\t20\t3\t22\t1.2e-05\t40.1\n"
             b"q1\tt2\t30.000\t10\t7\t0\t5\t14\t1\t10\tNA\tNA\n")
CHECKPOINT = (b'model_checkpoint_path: "model.ckpt-20"\n'
              b'all_model_checkpoint_paths: "model.ckpt-10"\n'
              b'all_model_checkpoint_paths: "model.ckpt-20"\n# a comment\n')


def _hhm_sample() -> bytes:
    from test_profile_formats import HHM

    return HHM.encode()


def _pssm_sample() -> bytes:
    from homalign.profile import Profile
    from homalign.profile.pssm_io import write_pssm

    path = _workdir / "sample.pssm"
    write_pssm(path, Profile.from_sequence("MKVLAG"))
    return path.read_bytes()


def _hmm_sample() -> bytes:
    from homalign.profile.pyhmmer_adapter import build_hmm, write_hmm
    from homalign.sequence import Sequence

    path = _workdir / "sample.hmm"
    write_hmm(path, build_hmm(Sequence("q", "MKVLAGW")))
    return path.read_bytes()


# --- the readers: name -> (file suffix, sample, read) -------------------------------------

def _read_fasta(p):
    from homalign.io import read_fasta

    return list(read_fasta(p))


def _read_sequences(p):
    from homalign.sequence import read_sequences

    return read_sequences(p)


def _read_aligned_fasta(p):
    from homalign.io import read_aligned_fasta

    return read_aligned_fasta(p)


def _read_a3m(p):
    from homalign.io import read_a3m

    return read_a3m(p)


def _read_stockholm(p):
    from homalign.io import iter_stockholm

    return list(iter_stockholm(p))


def _read_pir(p):
    from homalign.io import read_pir

    return read_pir(p)


def _read_tem(p):
    from homalign.io import read_tem

    return read_tem(p)


def _read_family(p):
    from homalign.evaluate.reference import read_family

    return read_family(p)


def _read_tmalign(p):
    import math

    from homalign.io import read_tmalign_pairs

    pairs = list(read_tmalign_pairs(p))
    for pair in pairs:
        assert all(math.isfinite(v) for v in (pair.tm1, pair.tm2, pair.tm3, pair.rmsd))
        assert len(pair.pairs) == pair.aligned
    return pairs


def _read_blast_tab(p):
    from homalign.io import read_blast_tab

    return list(read_blast_tab(p))


def _read_hhm(p):
    import numpy as np

    from homalign.profile.hhm import read_hhm

    hmm = read_hhm(p)
    for name in ("probs", "transitions", "n_eff", "freqs"):  # a profile to score with
        assert np.isfinite(getattr(hmm, name)).all(), name
    return hmm


def _read_pssm(p):
    import numpy as np

    from homalign.profile.pssm_io import profile_from_pssm, read_pssm

    profile = profile_from_pssm(read_pssm(p))
    for name in ("probs", "freqs", "trans_counts"):  # a profile to score with
        assert np.isfinite(getattr(profile, name)).all(), name
    return profile


def _read_hmm(p):
    from homalign.profile.pyhmmer_adapter import read_hmm

    return read_hmm(p)


def _read_labels(p):
    from homalign.evaluate.homology import labels_from_fasta

    return labels_from_fasta(p)


def _read_checkpoint_index(p):
    """The ``checkpoint`` index never stops a restore: unreadable means 'fall back'."""
    from homalign.train.checkpoint import CheckpointStore

    store = CheckpointStore(p.parent)
    meta = store.read_metadata()
    store.restore_order()
    store.load_latest()
    return meta


READERS: dict[str, tuple[str, Callable[[], bytes], Callable[[Path], object]]] = {
    "fasta": (".fa", lambda: FASTA, _read_fasta),
    "fasta-gz": (".fa.gz", lambda: gzip.compress(FASTA, mtime=0), _read_fasta),
    "sequences": (".fa", lambda: FASTA, _read_sequences),
    "aligned-fasta": (".fa", lambda: ALIGNED, _read_aligned_fasta),
    "a3m": (".a3m", lambda: A3M, _read_a3m),
    "stockholm": (".sto", lambda: STOCKHOLM, _read_stockholm),
    "pir": (".ali", lambda: PIR, _read_pir),
    "homstrad-family": (".ali", lambda: PIR, _read_family),
    "tem": (".tem", lambda: TEM, _read_tem),
    "tmalign-pairs": (".tsv", lambda: TMALIGN, _read_tmalign),
    "blast-tab": (".tsv", lambda: BLAST_TAB, _read_blast_tab),
    "hhm": (".hhm", _hhm_sample, _read_hhm),
    "pssm": (".pssm", _pssm_sample, _read_pssm),
    "hmmer3": (".hmm", _hmm_sample, _read_hmm),
    "astral-labels": (".fa", lambda: b">d1a a.1.1.1 (A:) x\nmkvla\n>d1b b.2.3.4 y\nmkv\n",
                      _read_labels),
}

_samples: dict[str, bytes] = {}


def _sample(name: str) -> bytes:
    if name not in _samples:
        _samples[name] = READERS[name][1]()
    return _samples[name]


# --- inputs --------------------------------------------------------------------------------

NASTY = [b"\x00", b"\xff", b"\x9c", b"\xc3\xa9", b"\r", b"\n", b"\t", b" ", b"-", b".", b"*",
         b"/", b">", b";", b":", b"#", b"//", b"=", b"0", b"-1", b"1000000000", b"99999999999999",
         b"-1100000", b"2147483647", b"-2147483649", b"nan", b"inf", b"1e309", b"M", b"MK", b"x", b"\xef\xbb\xbf"]


NUMBERS = [b"0", b"-1", b"1000000000", b"99999999999999", b"-1100000", b"2147483648",
           b"-2147483649", b"1" * 400, b"1e309", b"nan", b"-0", b"007"]


@st.composite
def token_edited(draw, sample: bytes) -> bytes:
    """``sample`` with whole fields or numbers replaced (the edits that keep a line's shape, so
    they reach the code past the field-count checks)."""
    data = sample
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            numbers = list(re.finditer(rb"\d+", data))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                data = data[:m.start()] + draw(st.sampled_from(NUMBERS)) + data[m.end():]
                continue
        parts = re.split(rb"(\s+)", data)
        fields = [k for k, part in enumerate(parts) if part and not part.isspace()]
        if fields:
            k = fields[draw(st.integers(0, len(fields) - 1))]
            parts[k] = draw(st.sampled_from(NASTY + NUMBERS))
            data = b"".join(parts)
    return data[:MAX_BYTES]


@st.composite
def mutated(draw, sample: bytes) -> bytes:
    """``sample`` with up to 6 edits: delete, duplicate or replace a span, insert a token."""
    data = bytearray(sample)
    for _ in range(draw(st.integers(0, 6))):
        if not data:
            data += draw(st.sampled_from(NASTY))
            continue
        i = draw(st.integers(0, len(data) - 1))
        j = draw(st.integers(i, min(len(data), i + 12)))
        op = draw(st.sampled_from(["delete", "duplicate", "replace", "insert", "truncate"]))
        if op == "delete":
            del data[i:j]
        elif op == "duplicate":
            data[i:i] = data[i:j]
        elif op == "replace":
            data[i:j] = draw(st.sampled_from(NASTY))
        elif op == "insert":
            data[i:i] = draw(st.sampled_from(NASTY))
        else:
            del data[i:]
    return bytes(data[:MAX_BYTES])


def inputs(sample: bytes) -> st.SearchStrategy[bytes]:
    tokens = sorted({t for t in sample.replace(b"\t", b" ").replace(b"\n", b" ").split(b" ") if t}
                    | set(NASTY))
    built = st.lists(st.one_of(st.sampled_from(tokens), st.sampled_from([b"\n", b"\t", b" "])),
                     max_size=120).map(lambda parts: b"".join(parts)[:MAX_BYTES])
    return st.one_of(st.binary(max_size=200), built, mutated(sample), token_edited(sample),
                     token_edited(sample))


_workdir = Path(tempfile.mkdtemp(prefix="homalign-fuzz-"))
atexit.register(shutil.rmtree, _workdir, ignore_errors=True)


def _check(name: str, data: bytes) -> None:
    suffix, _, read = READERS[name]
    folder = _workdir / name
    folder.mkdir(exist_ok=True)
    path = folder / ("checkpoint" if name == "checkpoint-index" else f"input{suffix}")
    path.write_bytes(data)
    tracemalloc.start()
    try:
        read(path)
    except InputError as exc:
        assert exc.path is None or Path(exc.path).name == path.name or exc.path == str(path), exc
        assert str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"{name}: {peak / 2**20:.0f} MiB for {len(data)} bytes of input"


@pytest.mark.parametrize("name", sorted(READERS))
def test_the_valid_sample_reads(name):
    """The samples the fuzzer mutates are valid files (so mutations reach deep code)."""
    suffix, _, read = READERS[name]
    path = _workdir / f"valid-{name}{suffix}"
    path.write_bytes(_sample(name))
    assert read(path) is not None


@pytest.mark.parametrize("name", sorted(READERS))
def test_reader_returns_records_or_raises_input_error(name):
    @FUZZ
    @given(data=inputs(_sample(name)))
    def run(data: bytes) -> None:
        _check(name, data)

    run()


def test_checkpoint_index_never_stops_a_restore():
    import torch

    from homalign.train.checkpoint import CheckpointStore

    folder = _workdir / "checkpoint-index"
    folder.mkdir(exist_ok=True)
    store = CheckpointStore(folder)
    store.save(10, {"w": torch.ones(2)}, {"a": 1})
    store.save(20, {"w": torch.zeros(2)}, {"a": 2})

    @FUZZ
    @given(data=inputs(CHECKPOINT))
    def run(data: bytes) -> None:
        (folder / "checkpoint").write_bytes(data)
        fresh = CheckpointStore(folder)
        fresh.read_metadata()
        ckpt = fresh.load_latest()  # any index: a sound checkpoint or None, never a crash
        assert ckpt is None or ckpt.info.step in (10, 20)

    run()

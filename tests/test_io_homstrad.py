"""Every real HOMSTRAD family (train + dev) and TM-align PIR pair parses consistently."""

from __future__ import annotations

from homalign.io import pir_to_msa, read_pir, read_tem
from homalign.paths import shared_data_root

DATA = shared_data_root()  # shared, read-only
HOMSTRAD = DATA / "homstrad"
FAMILIES = sorted(HOMSTRAD.glob("*/*/*.ali"))


def test_all_homstrad_families_parse_and_match_their_templates() -> None:
    assert len(FAMILIES) == 703 + 80
    n_breaks = 0
    for ali in FAMILIES:
        entries = read_pir(ali)
        assert len(entries) >= 2, ali
        width = len(entries[0].aligned)
        assert all(len(e.aligned) == width for e in entries)
        assert all(e.kind == "P1" for e in entries)
        assert all("/" not in e.aligned and "*" not in e.aligned for e in entries)
        n_breaks += sum(len(e.chain_breaks) for e in entries)

        tem = read_tem(ali.with_suffix(".tem"))
        assert list(tem) == [e.id for e in entries], ali
        for entry in entries:
            tracks = tem[entry.id]
            # the .tem writes the same alignment, with '-' where the .ali has a '/'
            assert tracks["sequence"] == entry.aligned, (ali, entry.id)
            assert "secondary structure and phi angle" in tracks
            assert "solvent accessibility" in tracks
            for name, track in tracks.items():
                assert len(track) == len(tracks["sequence"]), (ali, entry.id, name)
            # annotation tracks have a gap exactly where the sequence has one
            sse = tracks["secondary structure and phi angle"]
            assert [c == "-" for c in sse] == [c == "-" for c in entry.aligned], (ali, entry.id)
        pairs = pir_to_msa(entries).pairs(0, 1)
        assert len(pairs) > 0
    assert n_breaks > 0  # the chain-break handling was exercised

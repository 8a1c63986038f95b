"""Strict options: every registered method declares its options in one place, and an option it
does not declare (a misspelling, or one this method ignores) is an error naming the valid ones."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import homalign
from homalign.cli import build_parser, main
from homalign.errors import InputError
from homalign.methods import METHODS, Option, OptionError, get_method, method_names
from homalign.methods import learned as learned_mod
from homalign.methods import peers as peers_mod
from homalign.methods import profile as profile_mod
from homalign.methods import sequence as sequence_mod

Q = "HEAGAWGHEEMKVLAAGIVGKLRTAY"
T = "PAWHEAEMKVLAGGIVGRLRTAW"
ALL = method_names()


def _all_option_names() -> set[str]:
    return {o.name for n in ALL for o in get_method(n).options}


@pytest.mark.parametrize("name", ALL)
def test_every_method_declares_its_options(name):
    m = get_method(name)
    assert m.options is not None, f"{name} declares no options"
    for o in m.options:
        assert isinstance(o, Option) and o.name.isidentifier() and o.help, (name, o)
    assert set(m.defaults) <= set(m.option_names), (name, m.defaults)
    for o in m.options:  # every declared default is the method's default
        if o.default is not None and o.name in m.defaults:
            assert m.defaults[o.name] == o.default


@pytest.mark.parametrize("name", ALL)
def test_misspelt_option_is_an_error_naming_the_valid_ones(name):
    with pytest.raises(OptionError) as err:
        homalign.align(Q, T, method=name, gap_opn=5)
    text = str(err.value)
    assert "gap_opn" in text and repr(name) in text
    for o in get_method(name).options:
        assert o.name in text
    assert isinstance(err.value, InputError) and isinstance(err.value, TypeError)


@pytest.mark.parametrize("name", ALL)
def test_option_of_another_method_is_an_error(name):
    mine = set(get_method(name).option_names)
    other = sorted(_all_option_names() - mine)[0]
    with pytest.raises(OptionError, match=f"no option '{other}'"):
        homalign.align(Q, T, method=name, **{other: 1})


@pytest.mark.parametrize("name", ALL)
def test_wrong_type_is_an_error(name):
    typed = [o for o in get_method(name).options
             if o.type in (float, int) and o.choices is None and o.api_types == ()]
    assert typed, f"{name} has no numeric option"
    with pytest.raises(OptionError, match=typed[0].name):
        homalign.align(Q, T, method=name, **{typed[0].name: "five"})


@pytest.mark.parametrize("name", [n for n in ALL if get_method(n).score is not None])
def test_registry_checks_score_and_prepare_keywords(name):
    """The registered score/prepare (what search calls per target) check too, before any work."""
    m = METHODS[name]
    with pytest.raises(OptionError):
        m.score(None, None, bogus=1)
    with pytest.raises(OptionError):
        m.prepare(homalign.Sequence("q", Q), role="query", bogus=1)


def test_choices_are_checked():
    with pytest.raises(OptionError, match="decode"):
        homalign.align(Q, T, method="learned", decode="fast")


def test_sw_gap_open_changes_the_score_and_the_typo_does_not_run():
    default = homalign.align(Q, T, method="sw").score
    assert homalign.align(Q, T, method="sw", gap_open=5).score != default
    with pytest.raises(OptionError, match="did you mean 'gap_open'"):
        homalign.align(Q, T, method="sw", gap_opn=5)


def test_learned_rejects_sequence_options():
    with pytest.raises(OptionError, match="'gap_open'"):
        homalign.align(Q, T, method="learned", gap_open=5)


def test_search_rejects_unknown_keywords(tmp_path):
    db = tmp_path / "db.fa"
    db.write_text(f">a\n{Q}\n>b\n{T}\n")
    with pytest.raises(OptionError, match="did you mean 'evalue'"):
        homalign.search(Q, str(db), evalu=1e-3)
    with pytest.raises(OptionError, match="threshold"):
        homalign.search(Q, str(db), method="sw", threshold=0.5)
    hits = homalign.search(Q, str(db), evalue=1e-3)
    assert hits and hits[0].target_id == "a"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"evalue": "1e-3"}, TypeError, "evalue must be a number"),
    ({"evalue": float("nan")}, ValueError, "evalue must be positive"),
    ({"evalue": 0}, ValueError, "evalue must be positive"),
    ({"max_hits": -5}, ValueError, "max_hits must be at least 1"),
    ({"max_hits": 0}, ValueError, "max_hits must be at least 1"),
    ({"max_hits": 1.5}, TypeError, "max_hits must be an integer"),
    ({"iterations": 2.5}, TypeError, "iterations must be an integer"),
    ({"iterations": True}, TypeError, "iterations must be an integer"),
])
def test_search_limits_of_the_wrong_kind_or_range_are_errors(tmp_path, kwargs, error, match):
    db = tmp_path / "db.fa"
    db.write_text(f">a\n{Q}\n>b\n{T}\n")
    with pytest.raises(error, match=match):
        homalign.search(Q, str(db), **kwargs)


def test_neighbour_support_without_an_msa_database_says_what_it_needs(tmp_path):
    db = tmp_path / "db.fa"
    db.write_text(f">a\n{Q}\n>b\n{T}\n")
    with pytest.raises(ValueError, match="neighbour_support needs target_msa"):
        homalign.search(Q, str(db), method="learned", iterations=2, neighbour_support=2.0)


@pytest.mark.parametrize("method", ["sw", "pssm", "learned"])
def test_the_query_length_limit_holds_for_iterative_searches_too(tmp_path, method):
    db = tmp_path / "db.fa"
    db.write_text(f">a\n{Q}\n>b\n{T}\n")
    for iterations in (1, 2):
        with pytest.raises(InputError, match="more than the limit of 5"):
            homalign.search(Q, str(db), method=method, iterations=iterations,
                            max_query_length=5)


@pytest.mark.parametrize("bad", [None, 5, ["PAW"], Path("query.fa")])
def test_a_query_that_is_not_a_sequence_or_string_is_a_type_error(bad):
    with pytest.raises(TypeError, match="must be a Sequence or a residue string"):
        homalign.align(bad, T)
    with pytest.raises(TypeError, match="must be a Sequence or a residue string"):
        homalign.search(bad, "never-opened.fa")


def test_score_functions_have_no_catch_all():
    fns = [sequence_mod._scorer("local"), profile_mod.score_pssm,
           profile_mod.score_profile_profile, profile_mod.score_hhm, peers_mod.blastp_align,
           peers_mod.phmmer_align, peers_mod.mmseqs_align, learned_mod._align,
           learned_mod._align_prepared]
    for fn in fns:
        kinds = {p.kind for p in inspect.signature(fn).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, fn.__name__


def _help(verb: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[verb].format_help()


@pytest.mark.parametrize("verb", ["align", "search"])
def test_cli_flags_come_from_the_declarations(verb):
    text = _help(verb)
    skip = {"evalue", "target_msa", "db"} if verb == "search" else set()
    for name in ALL:
        for o in get_method(name).options:
            if o.cli and o.name not in skip:
                assert o.flag in text, (verb, name, o.flag)


def test_cli_option_the_method_ignores_is_an_error(tmp_path, capsys):
    q, t = tmp_path / "q.fa", tmp_path / "t.fa"
    q.write_text(f">q\n{Q}\n")
    t.write_text(f">t\n{T}\n")
    assert main(["align", str(q), str(t), "--method", "learned", "--gap-open", "5"]) == 2
    err = capsys.readouterr().err
    assert "--gap-open" in err and "--threshold" in err
    assert main(["align", str(q), str(t), "--method", "sw", "--gap-open", "5",
                 "--format", "json"]) == 0


def test_cli_flags_are_not_abbreviated(tmp_path, capsys):
    q = tmp_path / "q.fa"
    q.write_text(f">q\n{Q}\n")
    with pytest.raises(SystemExit) as exc:
        main(["search", str(q), str(q), "--evalu", "1e-3"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--evalu" in err
    assert err.startswith("usage: homalign search ") and "homalign search: error:" in err


def test_cli_extra_argument_is_an_error_of_its_verb(tmp_path, capsys):
    q = tmp_path / "q.fa"
    q.write_text(f">q\n{Q}\n")
    with pytest.raises(SystemExit) as exc:
        main(["align", str(q), str(q), str(q)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: homalign align ")
    assert f"homalign align: error: unrecognized arguments: {q}" in err


@pytest.mark.parametrize("method, option, value", [
    ("sw", "gap_open", -5.0), ("sw", "gap_extend", float("nan")), ("pssm", "gap_open", -1.0),
    ("learned", "threshold", 2.0), ("learned", "threshold", -1.0), ("blastp", "timeout", 0.0),
    ("blastp", "word_size", 0), ("blastp", "evalue", -1.0), ("phmmer", "popen", 0.5),
    ("prof-sim", "scale", 0.0), ("sw", "gap_open", float("inf")), ("hhm", "gap_weight", -1.0),
    ("hhm", "hh_shift", float("nan")), ("hhm-mac", "mact", 2.0),
    ("hhm-mac", "mac_temperature", 0.0), ("learned-homologs", "homolog_evalue", 0.0)])
def test_a_number_outside_its_options_range_is_an_error_naming_the_range(method, option, value):
    with pytest.raises(OptionError, match=rf"{option}=.* must be [\[(<>]"):
        get_method(method).check_options({option: value})


def test_out_of_range_and_unlisted_values_are_errors_on_the_command_line(tmp_path, capsys):
    from homalign import examples

    q, t = str(examples.path("query.fa")), str(examples.path("target.fa"))
    assert main(["align", q, t, "--method", "sw", "--gap-open", "-5"]) == 2
    assert "gap_open=-5.0 must be >= 0" in capsys.readouterr().err
    for flags, said in ((["--evalue", "abc"], "not a number: 'abc'"),
                        (["--evalue", "nan"], "must be a positive number"),
                        (["--method", "hhm", "--hh-shift", "x"], "a number or 'auto'")):
        with pytest.raises(SystemExit):  # argparse's own message, without internal names
            main(["search", q, str(examples.path("db.fa")), *flags])
        err = capsys.readouterr().err
        assert said in err and "_float" not in err
    assert main(["align", q, t, "--method", "pssm", "--target-msa", "none.a3m"]) == 2
    assert "--method pssm does not read --target-msa" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # argparse checks a declared choice itself
        main(["align", q, t, "--method", "blastp", "--comp-based-stats", "7"])
    assert stop.value.code == 2 and "invalid choice: 7" in capsys.readouterr().err

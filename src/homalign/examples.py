"""The example set shipped with homalign (``homalign/data/examples/``): the files the README's
"Use" section runs on, in the manner of HMMER's ``tutorial/`` directory.

``homalign examples DIR`` (or :func:`copy_to`) writes them into a directory of your own; the
README's commands then run there as written. :func:`path` gives one file where it is installed.
The files and where each came from: ``homalign/data/README.md``; ``scripts/make_examples.py``
rebuilt them.
"""

from __future__ import annotations

import filecmp
import shutil
from importlib import resources
from pathlib import Path

#: the example files with what each is for (the README uses them by these names)
FILES = {
    "query.fa": "one query: synaptotagmin I C2A domain (HOMSTRAD C2 member 1rsy)",
    "target.fa": "one target: protein kinase C beta C2 domain (HOMSTRAD C2 member 1a25a)",
    "template.fa": "template-mode targets: two C2 domains of the template",
    "template.tem": "their JOY template (HOMSTRAD C2.tem): secondary structure, accessibility",
    "C2.hmm": "HMMER3 model of the C2 family (hmmbuild, default settings)",
    "queries.fa": "three search queries: 1rsy, sperm whale myoglobin, Arabidopsis ADF1",
    "db.fa": "300 SCOPe 2.07 domains (ASTRAL 40%, train folds) with the queries' relatives",
    "homology-queries.txt": "six db.fa domain ids for benchmark homology",
    "homologs.fa": "76 UniProt sequences: homologues of query.fa and target.fa, and others",
    "train-toy.toml": "a tiny training config (a toy regression model, seconds to train)",
}


def directory() -> Path:
    """The installed example directory."""
    return Path(str(resources.files("homalign") / "data" / "examples"))


def path(name: str) -> Path:
    """The installed example file ``name`` (one of :data:`FILES`)."""
    if name not in FILES:
        raise KeyError(f"no example file {name!r}; the files: {', '.join(FILES)}")
    return directory() / name


def copy_to(dest: str | Path, *, force: bool = False) -> list[Path]:
    """Copy every example file into ``dest`` (created if needed); returns the paths written.

    A file already there with other content is an error (FileExistsError) unless ``force``;
    an identical one is left as it is."""
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    clash = [n for n in FILES if (out / n).exists()
             and not filecmp.cmp(out / n, path(n), shallow=False)]
    if clash and not force:
        raise FileExistsError(f"{out}: {', '.join(clash)} exist(s) with other content "
                              "(use force=True / --force to overwrite)")
    written = []
    for name in FILES:
        target = out / name
        if not target.exists() or name in clash:
            shutil.copyfile(path(name), target)
        written.append(target)
    return written


__all__ = ["FILES", "copy_to", "directory", "path"]

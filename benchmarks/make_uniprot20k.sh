#!/usr/bin/env bash
# The 20,000 UniProt sequences of Debian's mmseqs2-examples (UniProt, CC BY 4.0) as a homalign
# sequence database: the homologue database of `learned --homologs` and of the database-MSA rows
# in benchmarks/results/learned.md. Writes OUT/uniprot20k.fa and OUT/db (homalign makedb).
#
# Usage: benchmarks/make_uniprot20k.sh [OUT]   (default runs/uniprot20k)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/uniprot20k}
SRC=/usr/share/doc/mmseqs2/example-data/DB.fasta.gz
if [ ! -f "$SRC" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq mmseqs2-examples >/dev/null
    else
        echo "missing $SRC: install Debian's mmseqs2-examples" >&2
        exit 1
    fi
fi
mkdir -p "$OUT"
if [ ! -f "$OUT/uniprot20k.fa" ]; then
    zcat "$SRC" > "$OUT/uniprot20k.fa.tmp"
    mv "$OUT/uniprot20k.fa.tmp" "$OUT/uniprot20k.fa"
fi
[ -d "$OUT/db" ] || .venv/bin/homalign makedb "$OUT/uniprot20k.fa" "$OUT/db"
echo "$OUT/db"

"""``python -m homalign VERB ...``: the ``homalign`` command (:func:`homalign.cli.main`)."""

import sys

from homalign.cli import main

if __name__ == "__main__":
    sys.exit(main())

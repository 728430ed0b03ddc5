"""``python -m turnkit.cli``: the same as the ``turnkit`` command."""

import sys

from . import main

sys.exit(main())

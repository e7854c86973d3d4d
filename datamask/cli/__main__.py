"""``python -m datamask.cli`` is the ``datamask`` command."""

import sys

from . import main

sys.exit(main())

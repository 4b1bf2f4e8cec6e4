"""``python -m adaptive_pool.bench [options]``, the same as ``python -m adaptive_pool bench``."""

import sys

from . import main

sys.exit(main(sys.argv[1:]))

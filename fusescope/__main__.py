"""`python -m fusescope` is the same as the `fusescope` console script."""

import sys

from fusescope.cli import main

sys.exit(main())

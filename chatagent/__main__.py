"""`python -m chatagent`: the same as the `chatagent` command."""

import sys

from .cli import main

sys.exit(main())

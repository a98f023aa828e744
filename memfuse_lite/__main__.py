"""memfuse_lite command line: ``python -m memfuse_lite``."""
import sys

from .cli import main

sys.exit(main())

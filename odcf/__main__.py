"""`python -m odcf` — the same as the `odcf` command."""
import sys

from odcf.cli.main import main

if __name__ == "__main__":
    sys.exit(main())

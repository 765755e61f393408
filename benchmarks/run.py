"""odcf benchmark entry point: ``python benchmarks/run.py --data ../shared/data [--quick]``.

See benchmarks/README.md. Runs odcf and its peers on the shared real data and writes
benchmarks/results/latest.md (or quick.md) and the PNG plots.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from odcfbench.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

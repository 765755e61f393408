"""odcfbench: odcf against the tools users would pick instead, on real data.

Run it as a program (``python benchmarks/run.py --data ../shared/data``); it is not a test suite.
Modules: ``text`` (splitting and counting shared by the peers), ``tasks`` (loaders and metrics),
``peers`` (the baselines and odcf behind one interface), ``worker`` (runs one system in a fresh
process), ``speed`` (long document and model-only runs), ``report`` (tables and plots).
"""

"""Tests of the pipeline stages (a package, so that test module names may repeat elsewhere)."""

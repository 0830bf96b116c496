"""Benchmarks: ``python -m bench.<name> --help``; docs/benchmarks.md."""

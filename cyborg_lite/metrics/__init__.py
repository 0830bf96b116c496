"""Prometheus metrics: what every process counts, where the work
happens (counted.py), and the directory prometheus_client's
multi-process mode keeps its files in (multiproc_dir.py)."""

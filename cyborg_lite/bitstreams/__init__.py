"""Bitstreams: file formats, the image store, upload staging and
detached signatures (pure: the API, the agent and the CLI import
them), and what is trusted and may be programmed, read from the
database (trust.py, checks.py)."""

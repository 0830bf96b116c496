"""Placement: the client, the desired provider tree and the reporter."""

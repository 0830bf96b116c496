"""Placement: the client, the reporter and the Placement inventory sink."""

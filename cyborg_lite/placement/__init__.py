"""Placement: provider names, the allocation-candidates query and the
desired provider tree (pure), the client, the reporter and the
sink."""

"""Versioned notifications: the catalogue and the queue (events.py),
who hands them to oslo.messaging (senders.py), and the child
process that sends them for a broker (child.py)."""

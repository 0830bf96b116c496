"""Attach handles: claiming one for a bind and giving it back.

A handle (a PCI function, an mdev) is on at most one ARQ: ``in_use`` is
set and cleared only by the conditional UPDATEs here, and the UNIQUE
accelerator_requests.attach_handle_id refuses a second ARQ whatever else
goes wrong. The agent report's sync of handles is db/inventory.py's.
"""
import sqlalchemy as sa

from cyborg_lite.db import conditional
from cyborg_lite.db import models

HANDLE = models.AttachHandle


def claim_free(s, deployable_id):
    """Mark one free attach handle of the deployable in use; return it.

    Returns None when no handle is free. A conditional UPDATE on
    (in_use=false, version) decides: a handle that another transaction
    claimed meanwhile no longer matches, and the next candidate is tried.
    """
    query = (sa.select(HANDLE.id, HANDLE.version)
             .where(HANDLE.deployable_id == deployable_id,
                    HANDLE.in_use.is_(False))
             .order_by(HANDLE.id))
    if conditional.skip_locked(s):
        # NOTE: concurrent binds to one region then skip each other's
        # handle instead of queueing behind it.
        query = query.with_for_update(skip_locked=True)
    for handle_id, version in s.execute(query).all():
        if conditional.update(s, HANDLE, HANDLE.id == handle_id,
                              {'in_use': True}, HANDLE.version == version,
                              HANDLE.in_use.is_(False)):
            return s.get(HANDLE, handle_id, populate_existing=True)
    return None


def free(s, handle_id):
    """Mark the handle free; False if it was not in use (already freed)."""
    return bool(conditional.update(s, HANDLE, HANDLE.id == handle_id,
                                   {'in_use': False},
                                   HANDLE.in_use.is_(True)))

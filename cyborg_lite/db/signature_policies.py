"""Queries of ``project_signature_policies``: an admin's
[bitstreams]signature_policy for one project, overriding the configured
one (bitstreams/trust.policy_for reads both)."""
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import enums
from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db.sql import session

Policy = models.ProjectSignaturePolicy


def get(project_id):
    """The project's override, or None."""
    if project_id is None:
        return None
    with session.reader() as s:
        return s.get(Policy, project_id)


def list_all():
    with session.reader() as s:
        return list(s.scalars(sa.select(Policy).order_by(Policy.project_id)))


def set_policy(project_id, policy):
    """Create or replace the project's override; the row."""
    if policy not in enums.SIGNATURE_POLICIES:
        raise exception.Invalid(reason='signature policy must be one of %s'
                                % ', '.join(enums.SIGNATURE_POLICIES))
    try:
        return _upsert(project_id, policy)
    except sa_exc.IntegrityError:
        # Another admin created it meanwhile: this one replaces it.
        return _upsert(project_id, policy)


def _upsert(project_id, policy):
    with session.writer() as s:
        row = s.get(Policy, project_id, with_for_update=True)
        if row is None:
            row = Policy(project_id=project_id, policy=policy)
            s.add(row)
        else:
            row.policy = policy
            row.updated_at = models.utcnow()
    return row


def delete(project_id):
    """Drop the override (the configured policy applies again)."""
    with session.writer() as s:
        row = s.get(Policy, project_id)
        if row is None:
            raise exception.NotFound('Project %s has no signature policy of '
                                     'its own.' % project_id)
        s.delete(row)
    return row

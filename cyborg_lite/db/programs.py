"""Reads of programming jobs for the API (/v2/programs).

The state machine and every write live in db/programming_jobs.py (the
conductor's); this module only lists and shows jobs the way the API
names them: with the uuids of their region (deployable) and bitstream,
read in the same query, and limited to what the caller may see.
"""
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import pagination
from cyborg_lite.db import session

Job = models.ProgrammingJob
SORT_KEYS = ('created_at', 'uuid', 'state')


def _select(viewer):
    stmt = (sa.select(Job, models.Deployable.uuid, models.Bitstream.uuid)
            .join(models.Deployable, Job.deployable_id == models.Deployable.id)
            .join(models.Bitstream, Job.bitstream_id == models.Bitstream.id))
    if viewer is pagination.ALL:
        return stmt
    # NOTE: a caller without a project sees nothing rather than every job
    # whose project is NULL (those the conductor started on its own).
    if viewer is None:
        return stmt.where(sa.false())
    return stmt.where(Job.project_id == viewer)


def _filtered(stmt, deployable_uuid=None, bitstream_uuid=None, state=None,
              hostname=None):
    for column, value in ((models.Deployable.uuid, deployable_uuid),
                          (models.Bitstream.uuid, bitstream_uuid),
                          (Job.state, state), (Job.hostname, hostname)):
        if value is not None:
            stmt = stmt.where(column == value)
    return stmt


def list_jobs(viewer, filters=None, **page):
    """[(job, deployable uuid, bitstream uuid), ...] of one page."""
    stmt = _filtered(_select(viewer), **(filters or {}))
    with session.reader() as s:
        rows = pagination.paginate(s, stmt, Job, **page)
    return [tuple(row) for row in rows]


def get_job(viewer, job_uuid):
    """(job, deployable uuid, bitstream uuid); ProgrammingJobNotFound when
    it does not exist or belongs to a project the viewer is not in."""
    with session.reader() as s:
        row = s.execute(_select(viewer).where(Job.uuid == job_uuid)).first()
    if row is None:
        raise exception.ProgrammingJobNotFound(uuid=job_uuid)
    return tuple(row)

"""Program a region before binding an ARQ to it (bind's plug point).

The bind workflow calls ``BindProgrammer`` when the device profile group
asks for ``accel:bitstream_id`` or ``accel:function_id`` that the chosen
region does not hold. It starts a programming job linked to the ARQ and
waits for it to end, reading the job from the database: the agent may
report to any conductor, so this one's memory would not see the outcome.
Any failure raises with the job's error, which bind.py turns into
BindFailed with that reason.
"""
import time

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common.bitstream_formats import normalise_id
from cyborg_lite.conf import CONF
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import programming_jobs as jobs_db

LOG = logging.getLogger(__name__)


def _visible(project_id, is_admin):
    """list_bitstreams filters for what this requester may load."""
    if is_admin:
        return {}
    if project_id is None:
        return {'visibility': 'public'}
    return {'visible_to_project': project_id}


def resolve_function(function_id, deployable, project_id=None,
                     is_admin=False):
    """The uuid of the one active bitstream that loads ``function_id``
    into a region of this type; none or several differing ones refuse."""
    wanted = normalise_id(function_id, 'accel:function_id')
    region_type = normalise_id(deployable.region_type, 'region_type')
    found = [b for b in bitstreams_db.list_bitstreams(
                 status='active', **_visible(project_id, is_admin))
             if normalise_id(b.function_id, 'function_id') == wanted and
             normalise_id(b.region_type, 'region_type') == region_type]
    if not found:
        raise exception.NoBitstreamForFunction(function_id=function_id,
                                               region_type=region_type)
    # Several rows of the same bytes (re-uploads) are one image.
    if len({b.sha256 for b in found}) > 1:
        raise exception.AmbiguousFunction(
            function_id=function_id, region_type=region_type,
            uuids=', '.join(b.uuid for b in found))
    return found[0].uuid


def wait_for_job(job_uuid, timeout, poll_interval):
    """The job once it ended; ProgrammingError if it runs past timeout."""
    deadline = time.monotonic() + timeout
    while True:
        job = jobs_db.get(job_uuid)
        if job.state in jobs_db.TERMINAL:
            return job
        if time.monotonic() >= deadline:
            raise exception.ProgrammingError(
                reason='programming job %s did not end within %s s (it is '
                       '%s and goes on)' % (job_uuid, timeout, job.state))
        time.sleep(poll_interval)


class BindProgrammer:
    """``program_before_bind`` for bind.set_program_before_bind."""

    def __init__(self, flow, conf=CONF):
        self.flow = flow
        self.conf = conf

    def __call__(self, ctxt, arq_uuid, deployable_uuid, bitstream_id=None,
                 function_id=None):
        arq = arqs_db.get(arq_uuid)
        is_admin = bool(getattr(ctxt, 'is_admin', False))
        # NOTE: the ARQ's project decides which private bitstreams it may
        # load, whoever sent the bind.
        project_id = arq.project_id or getattr(ctxt, 'project_id', None)
        if function_id is not None:
            deployable, _device = jobs_db.load_region(deployable_uuid)
            bitstream_id = resolve_function(function_id, deployable,
                                            project_id, is_admin)
        job = self.flow.start_job(
            bitstream_id, deployable_uuid, is_admin=is_admin,
            user_id=getattr(ctxt, 'user_id', None), project_id=project_id,
            arq_id=arq.id)
        LOG.info('Bind of ARQ %s waits for programming job %s', arq_uuid,
                 job['uuid'])
        opts = self.conf.programming
        done = wait_for_job(job['uuid'], opts.bind_wait_timeout,
                            opts.bind_poll_interval)
        if done.state != 'succeeded':
            raise exception.ProgrammingError(
                reason='job %s %s: %s' % (done.uuid, done.state,
                                          done.error or 'no reason given'))

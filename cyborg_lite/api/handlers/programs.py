"""/v2/programs: programming jobs, "load bitstream B into region D" (2.4).

Creating and cancelling a job go to the conductor (ConductorAPI.program,
cancel_program), which checks, before any byte reaches hardware, that the
bitstream is active and visible to the caller, that its region type is
the region's, that no Bound ARQ holds the region (unless an admin
forces), and that the region has no other active job; its refusals come
back as 400/403/404/409. No conductor answering is a 503. Reads come from
the database (db/programming_jobs.py).

Cancelling is ``POST /v2/programs/{uuid}/cancel``, not DELETE: the job is
not deleted (it stays, ``cancelled``, as the record of what was asked),
and OpenStack APIs spell such state changes as a POST to an action.

A job shows its ``tries`` (each agent's go at it: number, host, outcome,
error, times), and ``attempts`` is the number of tries begun; ``error``
is the job's own (cleared on success; while a retry is queued it names
the try that was abandoned). Both came with 2.4's routes (issue 18.5
changed what ``attempts`` counted, a fix, not a new version).
"""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import programs as policies
from cyborg_lite.api.schemas import programs as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import programming_jobs as db
from cyborg_lite.db.sql import pagination

MIN_VERSION = '2.4'
_FIELDS = ('uuid', 'state', 'hostname', 'attempts', 'max_attempts',
           'error', 'force', 'project_id')
_TIMES = ('created_at', 'updated_at', 'started_at', 'finished_at')
_FILTERS = ('deployable_uuid', 'bitstream_uuid', 'state', 'hostname')
_TRY_FIELDS = ('number', 'hostname', 'outcome', 'error')
_TRY_TIMES = ('started_at', 'ended_at')


def _require_version(req):
    microversion.require(req, MIN_VERSION, '/v2/programs')


def _try_view(job_try):
    body = {key: getattr(job_try, key) for key in _TRY_FIELDS}
    body.update({key: utils.timestamp(getattr(job_try, key))
                 for key in _TRY_TIMES})
    return body


def view(req, job, deployable_uuid, bitstream_uuid, tries):
    body = {key: getattr(job, key) for key in _FIELDS}
    body.update({key: utils.timestamp(getattr(job, key)) for key in _TIMES})
    body.update(deployable_uuid=deployable_uuid,
                bitstream_uuid=bitstream_uuid,
                tries=[_try_view(t) for t in tries],
                links=utils.link(req, 'programs', job.uuid))
    return body


def _find(req, uuid):
    """(job, deployable uuid, bitstream uuid) if the caller may see it."""
    utils.require_uuid(uuid, exception.ProgrammingJobNotFound(uuid=uuid))
    return db.get_visible(utils.visible_to(req), uuid)


def create_program(req):
    """202: the job is queued; poll GET /v2/programs/{uuid} for its end."""
    _require_version(req)
    utils.authorize(req, policies.CREATE)
    body = utils.json_body(req, schemas.CREATE)
    force = body.get('force', False)
    if force:
        utils.authorize(req, policies.FORCE)
    job = utils.conductor(req).program(
        utils.context(req), body['bitstream_uuid'], body['deployable_uuid'],
        force=force)
    # NOTE: shown as reads show it (the conductor's dict has other time
    # formats); the job may have moved on already, which is the truth.
    resp = utils.response(view(req, *db.get_visible(pagination.ALL,
                                                    job['uuid'])),
                          status=202)
    resp.location = utils.link(req, 'programs', job['uuid'])[0]['href']
    return resp


def list_programs(req):
    _require_version(req)
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    page = utils.page(params)
    rows = db.page_jobs(utils.visible_to(req),
                        {k: params[k] for k in _FILTERS if k in params},
                        **page)
    return utils.response(utils.collection(
        'programs', [view(req, *row) for row in rows], req, 'programs',
        page['limit']))


def show_program(req, uuid):
    _require_version(req)
    utils.authorize(req, policies.GET_ONE)
    return utils.response(view(req, *_find(req, uuid)))


def program_stats(req):
    """2.11: the seconds of the ended jobs the caller may see (its
    project's; every project's for an admin), summed by project and
    namespace; ``project_id``: only that project's (another project's is
    empty for a non-admin: visibility follows the job's project)."""
    microversion.require(req, microversion.PROGRAMMING_STATS,
                         '/v2/programs/stats')
    utils.authorize(req, policies.STATS)
    params = utils.query(req, schemas.STATS_QUERY)
    return utils.response({'programming_seconds': db.seconds_by_project(
        utils.visible_to(req), params.get('project_id'))})


def cancel_program(req, uuid):
    """200 with the cancelled job; 409 once it may be writing the region
    (a write cannot be torn off half way) or has ended."""
    _require_version(req)
    utils.authorize(req, policies.CANCEL)
    job = _find(req, uuid)[0]
    utils.authorize(req, policies.CANCEL, {'project_id': job.project_id})
    utils.conductor(req).cancel_program(utils.context(req), uuid)
    return utils.response(view(req, *_find(req, uuid)))

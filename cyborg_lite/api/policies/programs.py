"""Programming job policies (/v2/programs).

Jobs belong to the project that asked for them; the target of show and
cancel is the job. Forcing a region that a Bound ARQ holds would pull an
accelerator from under a running workload, so it is an admin's act.
"""

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:program:get_all'
GET_ONE = 'cyborg:program:get_one'
CREATE = 'cyborg:program:create'
FORCE = 'cyborg:program:force'
CANCEL = 'cyborg:program:cancel'
STATS = 'cyborg:program:stats'

_PATH = '/v2/programs'


_rule = base.rule


RULES = [
    _rule(GET_ALL, base.PROJECT_READER_OR_ADMIN,
          'List the caller\'s project\'s programming jobs (all for '
          'admins).', _PATH, 'GET'),
    _rule(GET_ONE, base.PROJECT_READER_OR_ADMIN,
          'Show one programming job.', _PATH + '/{job_uuid}', 'GET'),
    _rule(CREATE, base.PROJECT_MEMBER_OR_ADMIN,
          'Program a region with a bitstream the caller may see.',
          _PATH, 'POST'),
    _rule(FORCE, base.ADMIN,
          'Program with force: true, reprogramming a region that a Bound '
          'accelerator request holds.', _PATH, 'POST'),
    _rule(CANCEL, base.PROJECT_MEMBER_OR_ADMIN,
          'Cancel a programming job that has not started writing.',
          _PATH + '/{job_uuid}/cancel', 'POST'),
    _rule(STATS, base.PROJECT_READER_OR_ADMIN,
          'Sum the seconds of the caller\'s project\'s ended programming '
          'jobs by namespace (every project\'s for admins).',
          _PATH + '/stats', 'GET'),
]


def list_rules():
    return RULES

"""Accelerator request (ARQ) policies: the owning project (or Nova with a
service role, or an admin) sees and acts on an ARQ; the target is the ARQ
itself. A caller that passes a rule whatever the project (service, admin)
finds the ARQs of every project.

Cyborg 17 also demands a service token for bind, unbind and delete by
instance; here that is policy: set ``cyborg:arq:update`` to
``rule:service_api or rule:service_token_api or rule:admin_api`` to
allow only Nova to bind. Under the default a project member may bind,
but only to capacity its instance holds in Placement
(``cyborg_lite:arq:bind_unallocated``, api/instance_allocations.py):
what Placement still offers to others stays the schedulers'.
"""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:arq:get_all'
GET_ONE = 'cyborg:arq:get_one'
CREATE = 'cyborg:arq:create'
DELETE = 'cyborg:arq:delete'
UPDATE = 'cyborg:arq:update'
BIND_UNALLOCATED = 'cyborg_lite:arq:bind_unallocated'

_PATH = '/v2/accelerator_requests'
RULES = [
    base.rule(GET_ALL, base.PROJECT_READER_OR_SERVICE_OR_ADMIN,
              'List the caller\'s project\'s ARQs (all for a service or '
              'an admin).',
              _PATH, 'GET'),
    base.rule(GET_ONE, base.PROJECT_READER_OR_SERVICE_OR_ADMIN,
              'Show one ARQ.',
              _PATH + '/{arq_uuid}', 'GET'),
    base.rule(CREATE, base.PROJECT_MEMBER_OR_SERVICE_OR_ADMIN,
              'Create ARQs from a device profile.',
              _PATH, 'POST'),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.PROJECT_MEMBER_OR_SERVICE_OR_ADMIN,
        description='Delete ARQs by uuid or by instance.',
        operations=[{'path': _PATH + '?arqs={arq_uuids}', 'method': 'DELETE'},
                    {'path': _PATH + '?instance={instance_uuid}',
                     'method': 'DELETE'}],
        scope_types=['project']),
    base.rule(UPDATE, base.PROJECT_MEMBER_OR_SERVICE_OR_ADMIN,
              'Bind or unbind ARQs (JSON patch).',
              _PATH, 'PATCH'),
    base.rule(BIND_UNALLOCATED, base.SERVICE_OR_ADMIN,
              'Bind an ARQ to a resource provider whatever Placement '
              'allocated to its instance (Nova claims it first). A caller '
              'this refuses binds only to a provider on which its '
              'instance, in the ARQ\'s project, holds an allocation in '
              'Placement.',
              _PATH, 'PATCH'),
]


def list_rules():
    return RULES

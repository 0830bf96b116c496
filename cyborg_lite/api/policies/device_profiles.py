"""Device profile policies.

Unlike Cyborg (admin-only writes), project members may create and delete
their own project's profiles; an admin's profiles have no project and are
public. Reads are further limited by visibility in the database: a caller
never sees another project's profiles.
"""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:device_profile:get_all'
GET_ONE = 'cyborg:device_profile:get_one'
CREATE = 'cyborg:device_profile:create'
DELETE = 'cyborg:device_profile:delete'
EXPLAIN = 'cyborg:device_profile:explain'

RULES = [
    base.rule(GET_ALL, base.PROJECT_READER_OR_ADMIN,
              'List the device profiles the caller may see (public '
              'ones and its project\'s).',
              '/v2/device_profiles', 'GET'),
    base.rule(GET_ONE, base.PROJECT_READER_OR_ADMIN,
              'Show one device profile by uuid or (2.2) name.',
              '/v2/device_profiles/{uuid_or_name}', 'GET'),
    base.rule(CREATE, base.PROJECT_MEMBER_OR_ADMIN,
              'Create a device profile (owned by the caller\'s '
              'project; public when an admin creates it).',
              '/v2/device_profiles', 'POST'),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Delete a device profile; the target is the profile, '
                    'so members delete only their project\'s.',
        operations=[{'path': '/v2/device_profiles/{uuid_or_name}',
                     'method': 'DELETE'},
                    {'path': '/v2/device_profiles?value={names}',
                     'method': 'DELETE'}],
        scope_types=['project']),
    # NOTE: admins only, as the other operator reads (history, provider
    # trees, ResourceSlices): it counts every host and names the holders
    # (projects, instances, pods) of other projects.
    base.rule(EXPLAIN, base.ADMIN,
              'Explain (2.10) why a device profile\'s request groups get '
              'no accelerator: each constraint in the scheduler\'s order '
              'with the hosts and devices passing it, the first none '
              'passes, holders and near misses.',
              '/v2/device_profiles/{name}/explain', 'GET'),
]


def list_rules():
    return RULES

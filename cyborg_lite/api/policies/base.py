"""Building-block rules the per-resource rules refer to.

The target of every check carries the ``project_id`` of the thing acted on
(the caller's own project for lists and creates). A target whose project
is unknown or public has no ``project_id`` key at all, so ``project_id:
%(project_id)s`` cannot match it (oslo.policy compares str(None) ==
str(None) as equal, which would let a caller without a project act on
public objects).
"""
from oslo_policy import policy

ADMIN = 'rule:admin_api'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
PROJECT_MANAGER_OR_ADMIN = 'rule:project_manager_or_admin'
PROJECT_MEMBER_OR_SERVICE_OR_ADMIN = 'rule:project_member_or_service_or_admin'
PROJECT_READER_OR_SERVICE_OR_ADMIN = 'rule:project_reader_or_service_or_admin'
SERVICE_OR_ADMIN = 'rule:service_api or rule:service_token_api or ' \
    'rule:admin_api'


def rule(name, check_str, description, path, method):
    """A documented project-scoped rule for one operation."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'path': path, 'method': method}],
        scope_types=['project'])


RULES = [
    policy.RuleDefault(
        'context_is_admin', 'role:admin',
        description='Who is an administrator: sees and acts on every '
                    'project\'s objects.'),
    policy.RuleDefault(
        'admin_api', 'role:admin',
        description='Cloud administrator.'),
    # NOTE: Keystone's default roles imply reader from member and member
    # from manager, so a token carries all of them; naming them all keeps
    # the rules right where roles are not expanded (noauth, other IdPs).
    policy.RuleDefault(
        'project_reader_api',
        '(role:reader or role:member or role:manager) and '
        'project_id:%(project_id)s',
        description='A reader (or more) of the project owning the target.'),
    policy.RuleDefault(
        'project_member_api',
        '(role:member or role:manager) and project_id:%(project_id)s',
        description='A member (or manager) of the project owning the '
                    'target.'),
    policy.RuleDefault(
        'project_manager_api',
        'role:manager and project_id:%(project_id)s',
        description='A manager of the project owning the target.'),
    policy.RuleDefault(
        'service_api', 'role:service',
        description='Another service (Nova) acting with a service role.'),
    # NOTE: Nova sends its user's token with its own service token beside
    # it ([service_user]); keystonemiddleware puts that token's roles in
    # service_roles (oslo.context), which role: does not look at.
    policy.RuleDefault(
        'service_token_api', 'service_roles:service',
        description='A request that carries a service\'s token (Nova\'s '
                    '[service_user]) beside its user\'s.'),
    policy.RuleDefault(
        'project_reader_or_admin',
        'rule:project_reader_api or rule:admin_api',
        description='Project reader or admin.'),
    policy.RuleDefault(
        'project_member_or_admin',
        'rule:project_member_api or rule:admin_api',
        description='Project member or admin.'),
    policy.RuleDefault(
        'project_manager_or_admin',
        'rule:project_manager_api or rule:admin_api',
        description='Project manager or admin.'),
    policy.RuleDefault(
        'project_reader_or_service_or_admin',
        'rule:project_reader_api or rule:service_api or rule:admin_api',
        description='Project reader, a service (Nova), or admin.'),
    policy.RuleDefault(
        'project_member_or_service_or_admin',
        'rule:project_member_api or rule:service_api or rule:admin_api',
        description='Project member, a service (Nova), or admin.'),
]


def list_rules():
    return RULES

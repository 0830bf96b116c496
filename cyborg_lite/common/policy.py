"""The oslo.policy Enforcer: defaults from cyborg_lite.api.policies,
overrides from [oslo_policy] policy_file when it exists."""
import threading

from oslo_policy import policy

from cyborg_lite.api import policies
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF

_lock = threading.Lock()
_enforcer = None


def get_enforcer(conf=CONF):
    """The process Enforcer; also the ``oslo.policy.enforcer`` entry point
    (oslopolicy-policy-generator, oslopolicy-checker)."""
    global _enforcer
    with _lock:
        if _enforcer is None:
            enforcer = policy.Enforcer(conf)
            enforcer.register_defaults(policies.list_rules())
            _enforcer = enforcer
        return _enforcer


def reset():
    """Forget the Enforcer (tests change the configuration)."""
    global _enforcer
    with _lock:
        _enforcer = None


def _target(target):
    # NOTE: a None value is dropped, not passed: oslo.policy would match
    # 'project_id:%(project_id)s' for a caller without a project against
    # a target without one (str(None) == str(None)).
    return {k: v for k, v in (target or {}).items() if v is not None}


def check(context, rule, target=None):
    """True when ``context`` may do ``rule`` to ``target``."""
    return get_enforcer().enforce(rule, _target(target),
                                  context.to_policy_values())


def authorize(context, rule, target=None):
    """Raise Forbidden (403) unless ``context`` may do ``rule``."""
    if not check(context, rule, target):
        raise exception.Forbidden(
            "Policy doesn't allow %s to be performed." % rule)


def check_is_admin(context):
    return check(context, 'context_is_admin')

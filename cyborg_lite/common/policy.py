"""The oslo.policy Enforcer: defaults from the ``oslo.policy.policies``
entry point ``cyborg_lite`` (the API's rules, cyborg_lite/api/policies,
found as oslopolicy-sample-generator finds them, so this module needs no
import of the API), overrides from [oslo_policy] policy_file when it
exists."""
import threading

from oslo_policy import policy
from stevedore import driver as stevedore_driver

from cyborg_lite.common import exception
from cyborg_lite.conf import CONF

DEFAULTS_NAMESPACE = 'oslo.policy.policies'
DEFAULTS_NAME = 'cyborg_lite'

_lock = threading.Lock()
_enforcer = None


def default_rules():
    """The registered defaults: the rules the entry point lists."""
    list_rules = stevedore_driver.DriverManager(
        DEFAULTS_NAMESPACE, DEFAULTS_NAME, invoke_on_load=False).driver
    return list_rules()


def get_enforcer(conf=CONF):
    """The process Enforcer; also the ``oslo.policy.enforcer`` entry point
    (oslopolicy-policy-generator, oslopolicy-checker)."""
    global _enforcer
    with _lock:
        if _enforcer is None:
            enforcer = policy.Enforcer(conf)
            enforcer.register_defaults(default_rules())
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

"""The oslo.policy Enforcer: defaults from the ``oslo.policy.policies``
entry point ``cyborg_lite`` (the API's rules, cyborg_lite/api/policies,
found as oslopolicy-sample-generator finds them, so this module needs no
import of the API), overrides from [oslo_policy] policy_file when it
exists.

Decisions are remembered (``CachingEnforcer``): evaluating a rule tree
with oslo.policy costs about a millisecond (it inspects every check's
signature on each call), a good part of a small request; the answer
depends only on the rule set, the target and the caller's credentials.
And the policy file and policy.d (where they are, and whether they
changed) are looked at once a second, not on every decision (see
``CachingEnforcer.CHECK_TTL_S``): an edit is obeyed within a second.
"""
from collections import abc
import threading
import time

from oslo_config import cfg
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


class CachingEnforcer(policy.Enforcer):
    """An Enforcer that remembers each decision for (rule, target,
    credentials), forgetting them all whenever its rules change: oslo.policy
    reloads a changed policy file (or policy.d) through ``set_rules``,
    which ``load_rules`` calls when it finds a change."""

    MAX_DECISIONS = 4096
    # How long the policy files are taken as they were last seen: where a
    # policy file or directory is (or that it is nowhere), and that what
    # it holds did not change. oslo.policy checks both before every
    # decision: finding them searches every config directory (a third of
    # a small request's time), and even with nothing changed load_rules
    # walks every registered rule (~30 us, two decisions a request).
    CHECK_TTL_S = 1.0

    def __init__(self, *args, clock=time.monotonic, **kwargs):
        self._decisions = {}
        self._locations = {}
        self._clock = clock
        self._rules_checked_at = None
        super().__init__(*args, **kwargs)

    def load_rules(self, force_reload=False):
        now = self._clock()
        checked = self._rules_checked_at
        if force_reload or not self.rules or checked is None \
                or now - checked >= self.CHECK_TTL_S:
            super().load_rules(force_reload)
            self._rules_checked_at = now

    def _get_policy_path(self, path):
        now = self._clock()
        known = self._locations.get(path)
        if known is None or now - known[0] >= self.CHECK_TTL_S:
            try:
                found = super()._get_policy_path(path)
            except cfg.ConfigFilesNotFoundError:
                found = None
            known = self._locations[path] = (now, found)
        if known[1] is None:
            raise cfg.ConfigFilesNotFoundError([path])
        return known[1]

    def _forget(self):
        self._decisions = {}
        self._rules_checked_at = None

    def set_rules(self, *args, **kwargs):
        self._forget()
        super().set_rules(*args, **kwargs)

    def clear(self):
        self._forget()
        super().clear()

    def register_default(self, *args, **kwargs):
        self._forget()
        super().register_default(*args, **kwargs)

    def enforce(self, rule, target, creds, do_raise=False, exc=None, *args,
                **kwargs):
        key = None
        if isinstance(rule, str) and not do_raise and not args \
                and not kwargs and isinstance(creds, abc.Mapping):
            key = _decision_key(rule, target, creds)
        if key is None:
            return super().enforce(rule, target, creds, do_raise, exc,
                                   *args, **kwargs)
        self.load_rules()
        decisions = self._decisions
        if key not in decisions:
            if len(decisions) >= self.MAX_DECISIONS:
                decisions.clear()
            decisions[key] = super().enforce(rule, target, creds)
        return decisions[key]


_PLAIN = frozenset({str, int, float, bool, type(None)})
_SEQUENCES = frozenset({list, tuple, set, frozenset})


def _frozen(mapping):
    """A hashable form of a dict of plain values (lists and sets as
    tuples); None when some value is not plain. Equal forms are equal
    dicts of the same types (True is 1 to Python, not to a policy rule);
    equal dicts built in another order only miss the cache."""
    items = []
    for name, value in mapping.items():
        kind = type(value)
        if kind in _SEQUENCES:
            value = tuple(value)
            for item in value:
                if type(item) is not str:
                    return None
        elif kind not in _PLAIN:
            return None
        items.append((name, kind, value))
    return tuple(items)


def _decision_key(rule, target, creds):
    frozen_target, frozen_creds = _frozen(target or {}), _frozen(creds)
    if frozen_target is None or frozen_creds is None:
        return None
    return rule, frozen_target, frozen_creds


def get_enforcer(conf=CONF):
    """The process Enforcer; also the ``oslo.policy.enforcer`` entry point
    (oslopolicy-policy-generator, oslopolicy-checker)."""
    global _enforcer
    with _lock:
        if _enforcer is None:
            enforcer = CachingEnforcer(conf)
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

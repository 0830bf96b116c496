"""api/policy finds the API's default rules through their entry point
and remembers its decisions until the rules change."""
import os

from oslo_policy import opts as oslo_policy_opts
from oslo_policy import policy as oslo_policy
import pytest

from cyborg_lite.api import policies
from cyborg_lite.api import policy
from cyborg_lite.api import wsgi_wrapper


def test_defaults_are_the_api_rules():
    assert [r.name for r in policy.default_rules()] == [
        r.name for r in policies.list_rules()]
    assert 'cyborg:arq:update' in {r.name for r in policy.default_rules()}


# --- remembered decisions ---------------------------------------------------

RULE = 'cyborg:device_profile:create'


def _caller(roles, project='p1'):
    return wsgi_wrapper.request_context({'HTTP_X_ROLES': roles,
                                         'HTTP_X_PROJECT_ID': project,
                                         'HTTP_X_USER_ID': 'u1'})


@pytest.fixture
def evaluations(conf, monkeypatch):
    """How many times oslo.policy itself evaluated a rule."""
    policy.reset()
    count = []
    evaluate = oslo_policy.Enforcer.enforce

    def counting(self, *args, **kwargs):
        count.append(args[0])
        return evaluate(self, *args, **kwargs)
    monkeypatch.setattr(oslo_policy.Enforcer, 'enforce', counting)
    yield count
    policy.reset()


def test_a_decision_is_evaluated_once(evaluations):
    member, reader = _caller('member,reader'), _caller('reader')
    for _ in range(3):
        assert policy.check(member, RULE, {'project_id': 'p1'})
        assert not policy.check(reader, RULE, {'project_id': 'p1'})
    assert policy.check(member, RULE, {'project_id': 'p1'})
    # Another target is another decision.
    assert not policy.check(member, RULE, {'project_id': 'p2'})
    assert evaluations == [RULE] * 3


def test_values_equal_to_python_but_not_to_a_rule_are_two_decisions(
        evaluations):
    """True == 1 in Python, but a rule compares their strings."""
    enforcer = policy.get_enforcer()
    enforcer.register_default(oslo_policy.RuleDefault(
        'test:flag', 'flag:%(flag)s'))
    assert enforcer.enforce('test:flag', {'flag': True}, {'flag': True})
    assert not enforcer.enforce('test:flag', {'flag': 1}, {'flag': True})
    assert not enforcer.enforce('test:flag', {'flag': True}, {'flag': 1})
    assert evaluations == ['test:flag'] * 3


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _enforcer(conf):
    """A CachingEnforcer on a clock of the test's, with the API's rules."""
    clock = Clock()
    enforcer = policy.CachingEnforcer(conf, clock=clock)
    enforcer.register_defaults(policy.default_rules())
    return enforcer, clock


def _edit(rules, text):
    rules.write_text(text)
    later = os.stat(rules).st_mtime + 10
    os.utime(rules, (later, later))


def test_a_changed_policy_file_is_obeyed_within_a_second(evaluations, conf,
                                                         tmp_path):
    rules = tmp_path / 'policy.yaml'
    rules.write_text('"%s": "role:member"\n' % RULE)
    conf.set_override('policy_file', str(rules), group='oslo_policy')
    enforcer, clock = _enforcer(conf)
    member = _caller('member').to_policy_values()
    assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    _edit(rules, '"%s": "role:admin"\n' % RULE)
    clock.now = policy.CachingEnforcer.CHECK_TTL_S * 0.9
    assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    clock.now = policy.CachingEnforcer.CHECK_TTL_S
    assert not enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    assert evaluations == [RULE, RULE]


def test_rules_are_checked_once_a_second(conf, monkeypatch):
    loads = []
    load = oslo_policy.Enforcer.load_rules

    def counting(self, *args, **kwargs):
        loads.append(1)
        return load(self, *args, **kwargs)
    monkeypatch.setattr(oslo_policy.Enforcer, 'load_rules', counting)
    enforcer, clock = _enforcer(conf)
    member = _caller('member').to_policy_values()
    for _ in range(5):
        assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    assert len(loads) == 1
    clock.now = policy.CachingEnforcer.CHECK_TTL_S
    assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    assert len(loads) == 2
    # Rules changed in process (a default registered) are loaded at once.
    enforcer.register_default(oslo_policy.RuleDefault('cyborg:test:x', '!'))
    assert not enforcer.enforce('cyborg:test:x', {}, member)
    assert len(loads) == 3


def test_unhashable_credentials_are_evaluated_each_time(evaluations):
    creds = {'roles': ['member'], 'project_id': 'p1', 'odd': {'a': 1}}
    enforcer = policy.get_enforcer()
    for _ in range(2):
        assert enforcer.enforce(RULE, {'project_id': 'p1'}, creds)
    assert evaluations == [RULE, RULE]


# --- where the policy file and policy.d are ---------------------------------

def test_policy_locations_are_looked_up_once_a_second(conf, tmp_path,
                                                      monkeypatch):
    searches = []
    find = oslo_policy.Enforcer._get_policy_path

    def counting(self, path):
        searches.append(path)
        return find(self, path)
    monkeypatch.setattr(oslo_policy.Enforcer, '_get_policy_path', counting)
    rules = tmp_path / 'policy.yaml'
    rules_dir = tmp_path / 'policy.d'
    oslo_policy_opts.set_defaults(conf)
    conf.set_override('policy_file', str(rules), group='oslo_policy')
    conf.set_override('policy_dirs', [str(rules_dir)], group='oslo_policy')
    enforcer, clock = _enforcer(conf)
    member = _caller('member').to_policy_values()

    for _ in range(5):
        assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    assert sorted(searches) == sorted([str(rules), str(rules_dir)])

    # A policy file that appears is obeyed once the second has passed.
    rules.write_text('"%s": "role:admin"\n' % RULE)
    assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    clock.now = policy.CachingEnforcer.CHECK_TTL_S
    assert not enforcer.enforce(RULE, {'project_id': 'p1'}, member)
    # Found, its edits are obeyed once the second has passed.
    _edit(rules, '"%s": "role:member"\n' % RULE)
    clock.now = 2 * policy.CachingEnforcer.CHECK_TTL_S
    assert enforcer.enforce(RULE, {'project_id': 'p1'}, member)

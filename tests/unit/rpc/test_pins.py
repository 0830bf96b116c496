"""[upgrade_levels] (rpc/pins.py): what each value pins a client to, the
previous release's versions as its tag serves them, and ``auto``
following the services running now (db/services.py)."""
import ast
import os
import subprocess

import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.db import services as services_db
from cyborg_lite.rpc import pins
from cyborg_lite.rpc import transport as rpc
from cyborg_lite.rpc import versions
from tests import servers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# Where each release's managers are (files moved since 2026.1.0).
_MANAGERS = {'2026.1.0': {rpc.CONDUCTOR_TOPIC: 'cyborg_lite/conductor/'
                                               'manager.py',
                          rpc.AGENT_TOPIC: 'cyborg_lite/agent/manager.py'}}


def released_source(release, path):
    """The file ``path`` as release ``release`` (its git tag, or its
    commit in releases.yaml) has it."""
    import yaml
    with open(os.path.join(ROOT, 'releases.yaml')) as f:
        commit = {str(r['version']): r['commit']
                  for r in yaml.safe_load(f)['releases']}[release]
    done = subprocess.run(['git', '-C', ROOT, 'show', '%s:%s'
                           % (commit, path)], capture_output=True, text=True)
    if done.returncode != 0:
        assert not servers.under_ci(), done.stderr
        pytest.skip('no git history here: %s' % done.stderr.strip())
    return done.stdout


def served_version(source):
    """The version of the one ``target = messaging.Target(version=...)``
    of a manager's source."""
    found = [kw.value.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and
             getattr(node.func, 'attr', None) == 'Target'
             for kw in node.keywords if kw.arg == 'version']
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize('release', sorted(versions.RELEASED))
def test_each_release_pins_to_what_its_tag_serves(release):
    for topic, path in _MANAGERS[release].items():
        assert versions.RELEASED[release][topic] == served_version(
            released_source(release, path)), (release, topic)


def test_the_previous_release_is_pinnable():
    assert version.PREVIOUS_RELEASE in versions.RELEASED


@pytest.mark.parametrize('level,conductor,agent', [
    (None, None, None),
    ('', None, None),
    ('2026.1.0', '1.8', '1.3'),
    ('1.2', '1.2', '1.2'),
    ('1.10', '1.10', None),
])
def test_a_release_or_version_pins_each_topic(level, conductor, agent):
    assert pins.version_cap(rpc.CONDUCTOR_TOPIC, level) == conductor
    if agent is None and level:
        # 1.10 is newer than the agent API this code speaks.
        with pytest.raises(pins.InvalidLevel, match='newer than'):
            pins.version_cap(rpc.AGENT_TOPIC, level)
    else:
        assert pins.version_cap(rpc.AGENT_TOPIC, level) == agent


@pytest.mark.parametrize('level', ['2025.2.0', 'latest', '1', '1.x',
                                   '01.8', '2.0'])
def test_a_value_that_names_nothing_is_refused(level):
    with pytest.raises(pins.InvalidLevel):
        pins.version_cap(rpc.CONDUCTOR_TOPIC, level)


@pytest.mark.parametrize('option,level', [('conductor', '2025.2.0'),
                                          ('conductor', '2.0'),
                                          ('agent', '1.5')])
def test_a_service_refuses_to_start_on_a_pin_it_cannot_follow(conf, option,
                                                              level):
    conf.set_override(option, level, group='upgrade_levels')
    with pytest.raises(exception.ConfigError,
                       match=r'\[upgrade_levels\] %s is not valid' % option):
        pins.check(conf)


def test_auto_is_checked_at_start_without_reading_who_runs(conf):
    conf.set_override('conductor', 'auto', group='upgrade_levels')
    conf.set_override('agent', '2026.1.0', group='upgrade_levels')
    pins.check(conf)


def test_auto_follows_the_oldest_running_and_a_silent_one_is_2026_1():
    def auto(*peers):
        return pins.version_cap(rpc.CONDUCTOR_TOPIC, 'auto',
                                lambda: list(peers))
    assert auto() is None
    assert auto({rpc.CONDUCTOR_TOPIC: '1.10'}) == '1.10'
    # 1.9 < 1.10 as versions, not as strings.
    assert auto({rpc.CONDUCTOR_TOPIC: '1.10'},
                {rpc.CONDUCTOR_TOPIC: '1.9'}) == '1.9'
    assert auto({rpc.CONDUCTOR_TOPIC: '1.10'}, None) == \
        versions.RELEASED[version.UNRECORDED_RELEASE][rpc.CONDUCTOR_TOPIC]


def test_auto_reads_the_running_services_of_the_peer_kind(sqlite_db):
    spoken = versions.spoken()
    services_db.beat('conductor', 'c1', version.VERSION, spoken)
    services_db.beat('api', 'a1', version.VERSION, spoken)
    assert services_db.version_cap('agent', 'auto', 60) is None
    # An agent of 2026.1.0 heartbeats without saying its release.
    services_db.beat('agent', 'n1', None, None)
    services_db.beat('agent', 'n2', version.VERSION, spoken)
    assert services_db.version_cap('agent', 'auto', 60) == '1.3'
    services_db.beat('conductor', 'c2', '2026.1.5',
                     {rpc.CONDUCTOR_TOPIC: '1.9', rpc.AGENT_TOPIC: '1.3'})
    assert services_db.version_cap('conductor', 'auto', 60) == '1.9'
    # None beat within 0 seconds: none running, no pin.
    assert services_db.version_cap('conductor', 'auto', 0) is None
    assert services_db.version_cap('conductor', '1.4', 60) == '1.4'

"""A bad option value stops every service at start-up: one line on stderr
naming the option and the file, exit status 1, nothing started."""
import pytest

from tests import servers
from tests.functional import console
from tests.functional.all_in_one import process

# The brief's three, with every service; more kinds with one service (the
# check is one helper, config.check_values, shared by all).
BAD_VALUES = [
    ('bitstreams', 'max_size_mb', 'lots', 'invalid literal for int'),
    ('arq', 'bind_timeout', '-5', 'greater than or equal to 1'),
    ('api', 'max_limit', 'many', 'invalid literal for int'),
]
MORE_BAD_VALUES = [
    ('api', 'auth_strategy', 'kerberos', 'Valid values are'),
    ('database', 'sqlite_journal_mode', 'off', 'Valid values are'),
    ('agent', 'report_interval', '1e9', 'invalid literal for int'),
    ('placement', 'sync_retry_max_interval', 'soon', 'could not convert'),
    ('DEFAULT', 'host', 'two words', "doesn't match regex"),
    ('conductor', 'workers', '0', 'greater than or equal to 1'),
    ('api', 'max_limit', '1000001', 'less than or equal to 100000'),
    ('database', 'max_retries', '-2', 'greater than or equal to -1'),
    ('upgrade_levels', 'agent', 'latest', "doesn't match regex"),
    # A release this code has no versions of (rpc/pins.check).
    ('upgrade_levels', 'conductor', '2025.2.0', 'neither "auto", a release'),
    ('oslo_messaging_notifications', 'transport_url',
     'rabbbit://user:secret@broker:5672/', "no oslo.messaging driver"),
    ('oslo_messaging_notifications', 'transport_url', 'secret-broker',
     'not a transport URL'),
]
SERVICES = ['cyborg-lite-api', 'cyborg-lite-conductor', 'cyborg-lite-agent',
            'cyborg-lite-dbsync', 'cyborg-lite-all-in-one']
CASES = ([pytest.param(name, *bad, id='%s-%s.%s' % (name, *bad[:2]))
          for name in SERVICES for bad in BAD_VALUES] +
         [pytest.param('cyborg-lite-conductor', *bad,
                       id='cyborg-lite-conductor-%s.%s=%s' % bad[:3])
          for bad in MORE_BAD_VALUES])


def _args(name, tmp_path, conf):
    args = ['--config-file', conf]
    if name == 'cyborg-lite-dbsync':
        args.append('upgrade')
    if name == 'cyborg-lite-all-in-one':
        args += ['--state-dir', tmp_path / 'aio', '--api-port',
                 servers.free_port(), '--placement-port',
                 servers.free_port()]
    return args


@pytest.mark.parametrize('name, group, option, value, why', CASES)
def test_a_bad_value_stops_the_service_with_one_line(tmp_path, name, group,
                                                     option, value, why):
    conf = tmp_path / 'bad.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\ntransport_url = inproc://\n'
                    '[%s]\n%s = %s\n' % (tmp_path, group, option, value))
    args = _args(name, tmp_path, conf)
    script = console.Script(name, *args)
    assert script.run(timeout=60) == 1
    lines = script.stderr.strip().splitlines()
    assert len(lines) == 1, script.stderr
    assert lines[0].startswith('%s: error: ' % name)
    assert '[%s] %s in %s is not valid' % (group, option, conf) in lines[0]
    assert why in lines[0]
    # A transport URL's password is not printed.
    assert 'secret' not in lines[0]
    if name == 'cyborg-lite-all-in-one':
        assert process.placement_children(args[-1]) == []
        assert not (tmp_path / 'aio' / 'placement').exists()


def test_a_conductor_that_never_reaches_its_database_exits_1(tmp_path):
    conf = tmp_path / 'c.conf'
    conf.write_text(
        '[DEFAULT]\nstate_path = %s\ntransport_url = inproc://\n'
        '[database]\nconnection = postgresql+psycopg2://nobody@127.0.0.1:%d'
        '/x\nmax_retries = 1\nretry_interval = 1\n'
        % (tmp_path, servers.free_port()))
    script = console.Script('cyborg-lite-conductor', '--config-file', conf)
    assert script.run(timeout=60) == 1
    lines = script.stderr.strip().splitlines()
    assert lines[-1] == (
        'cyborg-lite-conductor: error: the database is unreachable after 2 '
        'tries 1 s apart ([database]max_retries, retry_interval); the log '
        'says why'), script.stderr
    # The why, logged once (no log file: on stdout).
    logged = [line for line in script.stdout.splitlines()
              if 'Database unreachable: ' in line]
    assert len(logged) == 1 and 'Connection refused' in logged[0], (
        script.stdout)

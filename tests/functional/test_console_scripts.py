"""Every console script starts quietly on threads: no eventlet imported,
no eventlet warning on stderr (operators read such a warning as a fault)."""
import re
import signal

import pytest

from cyborg_lite.common import version
from tests import servers
from tests.functional import console

SCRIPTS = ('cyborg-lite', 'cyborg-lite-all-in-one', 'cyborg-lite-api',
           'cyborg-lite-agent', 'cyborg-lite-conductor', 'cyborg-lite-dbsync')


def _assert_no_eventlet(script):
    assert console.modules_of(script.modules, 'eventlet') == []
    assert 'eventlet' not in script.stderr.lower(), script.stderr


@pytest.mark.parametrize('name', SCRIPTS)
def test_help_imports_no_eventlet(name, tmp_path):
    script = console.Script(name, '--help', modules_dir=tmp_path)
    assert script.run() == 0, script.stderr
    assert 'usage' in script.stdout.lower()
    _assert_no_eventlet(script)


@pytest.mark.parametrize('name', SCRIPTS)
def test_version_is_the_release(name):
    script = console.Script(name, '--version')
    assert script.run() == 0, script.stderr
    assert script.stdout.split()[-1] == version.VERSION, script.stdout


@pytest.fixture
def service_conf(tmp_path):
    db = tmp_path / 'db.sqlite'
    path = tmp_path / 'service.conf'
    path.write_text('\n'.join([
        '[DEFAULT]', 'transport_url = inproc://', 'state_path = %s' % tmp_path,
        '[database]', 'connection = sqlite:///%s' % db,
        # An agent's stop waits for the heartbeat in flight, which no
        # conductor answers: one heartbeat_interval.
        '[agent]', 'rpc_timeout = 1', 'heartbeat_interval = 1', '']))
    dbsync = console.Script('cyborg-lite-dbsync', '--config-file', path,
                            'upgrade', modules_dir=tmp_path / 'dbsync')
    assert dbsync.run() == 0, dbsync.stderr
    _assert_no_eventlet(dbsync)
    with open(path, 'a') as f:
        f.write('[api]\nport = %d\nworkers = 1\nauth_strategy = noauth\n'
                % servers.free_port())
    return path


def _aio_args(tmp_path):
    return ('--state-dir', tmp_path / 'aio', '--api-port', servers.free_port(),
            '--placement-port', servers.free_port())


@pytest.mark.parametrize('name, args, started', [
    ('cyborg-lite-conductor', None,
     r'Conductor \S+ started \(release %s' % re.escape(version.VERSION)),
    ('cyborg-lite-agent', None,
     r'Agent on \S+ started \(release %s' % re.escape(version.VERSION)),
    ('cyborg-lite-api', None, r'Booting worker'),
    pytest.param('cyborg-lite-all-in-one', _aio_args, 'all-in-one is running',
                 marks=pytest.mark.xdist_group('all_in_one'))])
def test_services_run_on_threads_without_eventlet(service_conf, tmp_path,
                                                  name, args, started):
    args = args(tmp_path) if args else ()
    script = console.Script(name, '--config-file', service_conf, *args,
                            modules_dir=tmp_path / name).start()
    try:
        script.wait_for(started)
        # The first line says which release started (read mid-upgrade).
        script.wait_for(r'%s %s starting' % (re.escape(name),
                                             re.escape(version.VERSION)))
    finally:
        status = script.finish(signal.SIGTERM)
    assert status == 0, script.stderr
    _assert_no_eventlet(script)
    assert console.modules_of(script.modules,
                              'oslo_service.backend._threading') != []


@pytest.mark.parametrize('argv', [('--help',), ('help', 'device', 'list'),
                                  ('bitstream', 'download', '--help')])
def test_cli_help_imports_no_http_stack(tmp_path, argv):
    # Help talks to nobody: keystoneauth and requests (most of the CPU
    # `cyborg-lite --help` cost, docs/benchmarks.md) stay unimported.
    env = {k: '' for k in ('OS_AUTH_TYPE', 'OS_AUTH_PLUGIN',
                           'CYBORG_LITE_URL')}
    script = console.Script('cyborg-lite', *argv, modules_dir=tmp_path,
                            env=env)
    assert script.run() == 0, script.stderr
    assert 'usage' in script.stdout.lower()
    for package in ('keystoneauth1', 'requests', 'urllib3'):
        assert console.modules_of(script.modules, package) == []


def test_cli_help_names_the_keystone_options(tmp_path):
    script = console.Script('cyborg-lite', '--help', modules_dir=tmp_path)
    assert script.run() == 0
    assert '--os-auth-url' in script.stdout
    assert 'Keystone authentication' in script.stdout

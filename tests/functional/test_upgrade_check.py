"""cyborg-lite-status upgrade check, run as an operator runs it, against
a real SQLite database and the real Placement: oslo.upgradecheck's exit
codes (0 success, 1 warning, 2 failure).

A database at head is a copy of the worker's migrated template
(tests/migrated_databases.py), as migrated as one cyborg-lite-dbsync
upgrade made (tests/unit/db/test_migrated_databases.py compares the
two); cyborg-lite-dbsync's own process is tested in
test_console_scripts.py and test_config_startup.py."""
import json

from cyborg_lite.cmd import placement_server
from cyborg_lite.cmd import status
from cyborg_lite.common import version
from cyborg_lite.db import services as services_db
from cyborg_lite.placement import client as placement_client
from tests import migrated_databases
from tests.functional import console


def _conf(tmp_path, placement=None):
    lines = ['[database]',
             'connection = sqlite:///%s' % (tmp_path / 'db.sqlite')]
    if placement is not None:
        lines += ['[placement]', 'auth_type = admin_token',
                  'token = %s' % placement_server.TOKEN,
                  'endpoint_override = %s' % placement.endpoint]
    path = tmp_path / 'status.conf'
    path.write_text('\n'.join(lines + ['']))
    return path


def _check(path):
    script = console.Script('cyborg-lite-status', '--config-file', path,
                            'upgrade', 'check', '--json')
    rc = script.run()
    assert rc in (0, 1, 2), script.stdout + script.stderr
    return rc, {c['check']: c
                for c in json.loads(script.stdout)['checks']}


def _at_head(request, tmp_path):
    """The database _conf names, migrated to head."""
    migrated_databases.new_database('sqlite', request,
                                    tmp_path / 'db.sqlite')


def test_an_unmigrated_database_fails_naming_dbsync(tmp_path):
    rc, results = _check(_conf(tmp_path))
    assert rc == 2, results
    assert 'cyborg-lite-dbsync upgrade' in results['Database schema'][
        'details']


def test_all_at_head_with_placement_is_success(request, tmp_path,
                                              placement):
    path = _conf(tmp_path, placement)
    _at_head(request, tmp_path)
    rc, results = _check(path)
    assert rc == 0, results
    assert placement_client.MICROVERSION in results[
        'Placement microversion']['details']


def test_a_service_older_than_the_previous_release_fails(request, tmp_path,
                                                         conf, placement):
    path = _conf(tmp_path, placement)
    _at_head(request, tmp_path)
    conf.set_override('connection', 'sqlite:///%s' % (tmp_path / 'db.sqlite'),
                      group='database')
    services_db.beat('agent', 'old-host', '2025.2.0', None)
    services_db.beat('agent', 'prev-host', version.PREVIOUS_RELEASE, None)
    services_db.beat('agent', 'unsaid-host', None, None)
    rc, results = _check(path)
    assert rc == 2, results
    details = results['Service releases']['details']
    assert 'agent old-host runs 2025.2.0' in details
    assert 'prev-host' not in details and 'unsaid-host' not in details


def test_placement_older_than_needed_fails(conf, placement, monkeypatch):
    from tests.functional.placement.conftest import configure_placement
    configure_placement(conf, placement.endpoint)
    monkeypatch.setattr(placement_client, 'MICROVERSION', '1.999')
    result = status.check_placement_microversion()
    assert result.code == status.Code.FAILURE, result.details
    assert '1.999' in result.details


def test_an_option_this_release_does_not_know_is_a_warning(request,
                                                           tmp_path,
                                                           placement):
    path = _conf(tmp_path, placement)
    path.write_text(path.read_text() +
                    '[conductor]\nagent_down_time = 60\n'
                    'publish_legacy_mode = true\n')
    _at_head(request, tmp_path)
    rc, results = _check(path)
    assert rc == 1, results
    details = results['Deprecated or removed options']['details']
    assert details == ('[conductor] publish_legacy_mode is not an option '
                       'of this release (removed?)'), details
    assert results['Online data migrations']['result'] == 0


def test_status_says_its_version():
    script = console.Script('cyborg-lite-status', '--version')
    assert script.run() == 0
    assert script.stdout.strip() == version.VERSION

"""The real ``openstack`` command with python-openstackclient,
python-cyborgclient and our plugin all installed: our plugin loads
cleanly, every ``accelerator`` command has one owner, and the stock
commands work against our API."""
import collections
import importlib.metadata
import json

from tests.functional.cli import conftest as c


def _names_by_dist():
    """{distribution: accelerator command names it registers}."""
    found = collections.defaultdict(set)
    for group in ('openstack.accelerator.v2', 'openstack.cyborg_lite.v2'):
        for ep in importlib.metadata.entry_points(group=group):
            found[ep.dist.name].add(ep.name.replace('_', ' '))
    return found


def test_plugin_loads_and_adds_no_duplicate_command(openstack):
    result = openstack('command', 'list', '-f', 'json')
    assert result.rc == 0, result
    assert 'Failed to import plugin' not in result.stderr
    names = collections.Counter(
        cmd for group in result.json for cmd in group['Commands']
        if cmd.startswith('accelerator '))
    assert names['accelerator device list'] >= 1
    # python-openstackclient and python-cyborgclient already duplicate
    # each other; whatever is doubled must be only that, never ours.
    by_dist = _names_by_dist()
    ours = by_dist.pop('cyborg_lite', set())
    theirs = [names for names in by_dist.values()]
    shared = set.intersection(*theirs) if len(theirs) > 1 else set()
    doubled = {n for n, count in names.items() if count > 1}
    assert doubled <= shared
    assert not ours & set().union(*theirs)


def test_stock_device_list_works_against_our_api(openstack):
    dev, _ = c.add_device('host1')
    result = openstack('accelerator', 'device', 'list', '-f', 'json')
    rows = result.json
    assert [(r['uuid'], r['hostname']) for r in rows] == [(dev, 'host1')]


def test_stock_profile_and_arq_commands_work_against_our_api(openstack,
                                                            cli):
    made = openstack('accelerator', 'device', 'profile', 'create', 'dp1',
                     '--group', 'resources:FPGA=1', '-f', 'json').json
    assert made['name'] == 'dp1'
    # What OSC created, cyborg-lite reads back: one API, two clients.
    shown = cli('device', 'profile', 'show', 'dp1', '-f', 'json').json
    assert shown['uuid'] == made['uuid']
    arq = openstack('accelerator', 'arq', 'create', 'dp1', '-f', 'json')
    assert arq.json['state'] == 'Initial'
    listed = cli('arq', 'list', '-f', 'json').json
    assert [a['uuid'] for a in listed] == [arq.json['uuid']]


def test_stock_error_is_reported_without_traceback(openstack):
    missing = '00000000-0000-0000-0000-000000000000'
    result = openstack('accelerator', 'device', 'show', missing)
    assert result.rc == 1
    assert 'Traceback' not in result.stderr
    assert json.dumps(missing)[1:-1] in result.stderr


def test_plugin_client_uses_osc_session_and_version(api_url):
    # What OSC hands our commands next round (bitstream, program, rp tree):
    # built the way the `openstack` shell builds it, against the real API.
    from openstack.config import loader
    from openstackclient.common import clientmanager
    cloud = loader.OpenStackConfig(
        load_yaml_config=False, load_envvars=False).get_one(
            auth_type='none', auth={'endpoint': api_url})
    manager = clientmanager.ClientManager(
        cli_options=cloud, api_version={'cyborg_lite': '2.2'})
    manager.setup_auth()
    api = manager.cyborg_lite
    assert api.api_version == '2.2'
    dev, _ = c.add_device('host1')
    assert [d['uuid'] for d in api.get_all('/devices', 'devices')] == [dev]

"""``cyborg-lite device disable|enable`` and why devices are unavailable
(API 2.5), with the real entry point against the real API."""
import sqlalchemy as sa

from cyborg_lite.api import microversion
from cyborg_lite.cli import devices as devices_cli
from cyborg_lite.cli import versioned
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.cli import conftest as c


def _reasons(cli):
    rows = cli('device', 'list', '-f', 'json').json
    return {r['hostname']: (r['status'], r['unavailable_reasons'])
            for r in rows}


def test_disable_enable_and_the_reasons_column(cli):
    dev, _ = c.add_device('host1')
    c.add_device('host2', pci='0000:3b:00.0')
    assert _reasons(cli) == {'host1': ('enabled', []),
                             'host2': ('enabled', [])}

    result = cli('device', 'disable', dev)
    assert (result.rc, result.stdout, result.stderr) == (0, '', '')
    assert _reasons(cli)['host1'] == ('maintaining', ['maintaining'])
    shown = cli('device', 'show', dev, '-f', 'json').json
    assert shown['unavailable_reasons'] == ['maintaining']

    assert cli('device', 'enable', dev).rc == 0
    assert _reasons(cli)['host1'] == ('enabled', [])


def test_a_host_whose_agent_is_down_shows_it(cli):
    c.add_device('host1')
    agents_db.heartbeat('host1')
    with session.writer() as s:
        s.execute(sa.update(models.Agent.__table__).values(state='down'))
    table = cli('device', 'list').stdout
    assert 'agent_down' in table
    assert _reasons(cli)['host1'] == ('enabled', ['agent_down'])


def test_an_unknown_device_is_one_line(cli):
    result = cli('device', 'disable', '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f')
    assert result.rc == 1 and 'Traceback' not in result.stderr
    assert '(HTTP 404)' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_cli_asks_for_the_apis_health_version():
    assert versioned.HEALTH_API_VERSION == microversion.DEVICE_HEALTH


def test_the_cli_asks_for_the_apis_history_version():
    assert devices_cli.HISTORY_API_VERSION == microversion.DEVICE_HISTORY


def test_an_unhealthy_device_shows_why_and_cannot_be_enabled(cli):
    dev, _ = c.add_device('host1')
    with session.writer() as s:
        s.execute(sa.update(models.Device.__table__).values(
            health='unhealthy', health_reason='catfatal_errors 0x4'))
    assert cli('device', 'disable', dev).rc == 0
    [row] = cli('device', 'list', '-f', 'json').json
    assert (row['health'], row['unavailable_reasons']) == (
        'unhealthy', ['maintaining', 'unhealthy'])
    assert cli('device', 'show', dev, '-f', 'json').json[
        'health_reason'] == 'catfatal_errors 0x4'
    result = cli('device', 'enable', dev)
    assert result.rc == 1 and '(HTTP 409)' in result.stderr
    assert 'catfatal_errors 0x4' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert cli('device', 'list', '-f', 'json').json[0]['status'] == \
        'maintaining'


def test_device_history_lists_its_transitions_oldest_first(cli):
    dev, _ = c.add_device('host1')
    cli('device', 'disable', dev)
    cli('device', 'enable', dev)
    rows = cli('device', 'history', dev, '-f', 'json').json
    assert [(r['event'], r['state']) for r in rows] == [
        ('device.disable', 'maintaining'), ('device.enable', 'enabled')]
    newest = cli('device', 'history', dev, '--limit', '1', '-f', 'json').json
    assert [r['event'] for r in newest] == ['device.enable']
    table = cli('device', 'history', dev).stdout
    assert 'device.disable' in table and 'claim_name' in table
    unknown = cli('device', 'history', '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f')
    assert unknown.rc == 1 and '(HTTP 404)' in unknown.stderr

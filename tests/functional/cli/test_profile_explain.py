"""``cyborg-lite device profile explain <name> [--host H]`` with the
real entry point against the real API (2.10)."""
from cyborg_lite.api import microversion
from cyborg_lite.cli import device_profiles as profiles_cli
from tests.functional.cli import conftest as c


def _rows(cli, *args):
    result = cli('device', 'profile', 'explain', *args, '-f', 'json')
    assert result.rc == 0, result.stderr
    return result.json


def _blocking(rows):
    return [(r['step'], r['blocking'], r['detail']) for r in rows
            if r['step'] != 'near miss' and r['blocking']]


def test_the_funnel_its_blocking_step_and_near_misses(cli):
    dev1, _ = c.add_device('host1')
    dev2, _ = c.add_device('host2', pci='0000:3b:00.0')
    assert cli('device', 'profile', 'create', 'dp', '--group',
               'resources:FPGA=1,trait:CUSTOM_FPGA_REGION_IFC_0=required'
               ).rc == 0
    rows = _rows(cli, 'dp')
    assert _blocking(rows) == []
    assert [(r['step'], r['hosts'], r['devices']) for r in rows][-1] == (
        'in_use', 2, 2)

    assert cli('device', 'disable', dev2).rc == 0
    assert _rows(cli, 'dp', '--host', 'host1')[-1]['devices'] == 1
    rows = _rows(cli, 'dp', '--host', 'host2')
    assert _blocking(rows) == [('maintenance', 'transient', '')]
    [miss] = [r for r in rows if r['step'] == 'near miss']
    assert miss['blocking'] == 'maintenance'
    assert miss['detail'].startswith('host2 host2_0000:3b:00.0_region0')
    assert cli('device', 'disable', dev1).rc == 0
    assert _blocking(_rows(cli, 'dp'))[0][:2] == ('maintenance',
                                                  'transient')

    assert cli('device', 'profile', 'create', 'gpu', '--group',
               'resources:PGPU=1').rc == 0
    assert _blocking(_rows(cli, 'gpu')) == [
        ('resource_class', 'permanent', '')]


def test_an_unknown_profile_or_host_is_one_line(cli):
    c.add_device('host1')
    result = cli('device', 'profile', 'explain', 'nope')
    assert result.rc == 1 and '(HTTP 404)' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert cli('device', 'profile', 'create', 'dp', '--group',
               'resources:FPGA=1').rc == 0
    result = cli('device', 'profile', 'explain', 'dp', '--host', 'host9')
    assert result.rc == 1 and 'host9' in result.stderr


def test_the_cli_asks_for_the_apis_explain_version():
    assert profiles_cli.EXPLAIN_API_VERSION == microversion.PROFILE_EXPLAIN


def test_openstack_accelerator_explains_as_cyborg_lite_does(cli, openstack):
    c.add_device('host1')
    c.add_device('host2', pci='0000:3b:00.0')
    assert cli('device', 'profile', 'create', 'gpu', '--group',
               'resources:PGPU=1').rc == 0
    result = openstack('accelerator', 'device', 'profile', 'explain', 'gpu',
                       '-f', 'json')
    assert result.rc == 0, result.stderr
    assert result.json == _rows(cli, 'gpu')
    assert _blocking(result.json) == [('resource_class', 'permanent', '')]

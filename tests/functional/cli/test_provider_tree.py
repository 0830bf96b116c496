"""``cyborg-lite resource-provider tree <host>``: the tree the conductor
wants in Placement, from the real API."""
import uuid

import requests

from tests.functional.cli import bitstream_cli as b
from tests.functional.cli import conftest as c
from tests.functional.placement.conftest import configure_placement

CARD = 'host1_0000:5e:00.0'
GPU = 'host1_0000:3b:00.0'


def _rp_uuid(name):
    return str(uuid.uuid3(uuid.NAMESPACE_DNS, name))


def _host():
    c.add_device('host1', regions=2)
    c.add_device('host1', pci='0000:3b:00.0', type_='GPU',
                 vendor='0x10de', regions=0)
    c.add_device('host2', pci='0000:af:00.0')


def test_json_rows_root_first_then_depth_first(cli):
    _host()
    rows = cli('resource-provider', 'tree', 'host1', '-f', 'json').json
    assert [(r['name'], r['uuid'], r['parent_uuid']) for r in rows] == [
        ('host1', 'unknown (Placement not configured)', None),
        (GPU, _rp_uuid(GPU), None),
        (CARD, _rp_uuid(CARD), None),
        (CARD + '_region0', _rp_uuid(CARD + '_region0'), _rp_uuid(CARD)),
        (CARD + '_region1', _rp_uuid(CARD + '_region1'), _rp_uuid(CARD))]
    region = rows[3]
    assert region['inventories']['FPGA']['total'] == 1
    assert 'CUSTOM_FPGA_REGION_IFC_0' in region['traits']
    assert rows[1]['inventories']['PGPU']['total'] == 1


def test_table_indents_children_under_parents(cli):
    _host()
    result = cli('resource-provider', 'tree', 'host1')
    assert result.rc == 0, result
    names = [line.split('|')[1].rstrip() for line in
             result.stdout.splitlines() if line.startswith('| ')]
    named = [n for n in names[1:] if n.strip()]
    assert named == [' host1', '   ' + GPU, '   ' + CARD,
                     '     %s_region0' % CARD, '     %s_region1' % CARD]
    assert '| FPGA=1 ' in result.stdout


def test_unknown_host_and_errors(cli):
    _host()
    b.one_line_error(cli('resource-provider', 'tree', 'nohost'),
                     'No device of host nohost is known', 'HTTP 404')


def test_root_shows_placements_uuid_or_not_yet_created(
        cli, conf, placement):  # noqa: F811
    hostname = 'host-%s' % uuid.uuid4().hex[:8]
    c.add_device(hostname, regions=1)
    configure_placement(conf, placement.endpoint)

    def root_row():
        rows = cli('resource-provider', 'tree', hostname, '-f', 'json').json
        return rows[0]['name'], rows[0]['uuid'], rows[1]['parent_uuid']

    assert root_row() == (hostname, 'not yet created', None)
    resp = requests.post(
        placement.endpoint + '/resource_providers', json={'name': hostname},
        headers={'X-Auth-Token': 'admin', 'OpenStack-API-Version':
                 'placement 1.20'}, timeout=30)
    assert resp.status_code == 200, resp.text
    root = resp.json()['uuid']
    assert root_row() == (hostname, root, root)
    table = cli('resource-provider', 'tree', hostname).stdout
    first = [line for line in table.splitlines() if line.startswith('| ')][1]
    assert [cell.strip() for cell in first.split('|')[1:3]] == [hostname,
                                                               root]

"""Long lists come as one JSON text per row (api/json_list.py,
db/sql/json_text.py): their bodies are, byte for byte, the one-object views
of the same rows, on every backend and microversion."""
import datetime

import pytest

from cyborg_lite.api import microversion
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import add_deployable
from tests.functional.api.conftest import add_device
from tests.functional.api.conftest import add_handle
from tests.functional.api.conftest import create_arqs
from tests.functional.api.conftest import create_profile
from tests.functional.api.conftest import set_arq

# Every kind of escape json.dumps writes: SQLite writes the JSON of a
# listed row (db/sql/json_text.py) and must spell it the same way.
ODD_TEXT = ('quote " backslash \\ newline \n percent %s é 中 \u2028 \U0001f600'
            ' controls \x01\x08\t\x0b\x0c\r\x1f del \x7f slash /')
# Printable ASCII and the control characters: a row with this text is
# the database's own spelling, not re-encoded (api/json_list.py).
ASCII_TEXT = ('quote " backslash \\ \b\t\n\f\r \x01\x0b\x1f slash / '
              'percent %s')


def _headers(version):
    return dict(ADMIN, **{'OpenStack-API-Version': 'accelerator ' + version})


def _assert_list_is_the_views(app, path, key, version):
    headers = _headers(version)
    listed = app.get('/v2/' + path, headers=headers)
    uuids = [item['uuid'] for item in listed.json[key]]
    assert uuids
    views = [app.get('/v2/%s/%s' % (path, uuid), headers=headers).body
             for uuid in uuids]
    assert listed.body == b'{"%s": [%s]}' % (key.encode(),
                                             b', '.join(views))
    assert listed.content_type == 'application/json'


def _odd_devices():
    plain = add_device(hostname='host1')
    add_device(hostname='host1', status='maintaining')
    sick = add_device(hostname='host2')
    odd = add_device(hostname='host-down')
    with session.writer() as s:
        s.query(models.Device).filter_by(id=sick.id).update(
            {'health': 'unhealthy', 'model': ASCII_TEXT,
             'health_reason': ODD_TEXT,
             'health_since': datetime.datetime(2026, 1, 2, 3, 4, 5, 678)})
        s.query(models.Device).filter_by(id=odd.id).update(
            {'model': ODD_TEXT, 'vendor_board_info': None,
             'updated_at': datetime.datetime(2026, 1, 2, 3, 4, 5, 678),
             'numa_node': 1, 'local_cpulist': '20-39,60-79', 'socket': 1,
             'pcie_root': 'pci0000:ae', 'pci_address': '0000:af:00.0'})
        s.add(models.Agent(hostname='host-down', state='down',
                           heartbeat_at=datetime.datetime(2026, 1, 1)))
    return plain


@pytest.mark.parametrize('version', ['2.0', '2.3', '2.5',
                                     microversion.TOPOLOGY,
                                     microversion.DEVICE_HEALTH])
def test_device_list_is_the_device_views(pg_app, version):
    _odd_devices()
    _assert_list_is_the_views(pg_app, 'devices', 'devices', version)


def test_device_list_shows_each_devices_reasons(pg_app):
    _odd_devices()
    listed = pg_app.get('/v2/devices', headers=_headers('2.5')).json
    assert sorted(tuple(d['unavailable_reasons'])
                  for d in listed['devices']) == [
        (), ('agent_down',), ('maintaining',), ('unhealthy',)]


def test_device_list_page_links_to_the_next(pg_app):
    _odd_devices()
    first = pg_app.get('/v2/devices?limit=3&type=FPGA',
                       headers=ADMIN).json
    [link] = first['devices_links']
    assert 'marker=%s' % first['devices'][-1]['uuid'] in link['href']
    rest = pg_app.get(link['href'].split('/v2/', 1)[1].join(['/v2/', '']),
                      headers=ADMIN).json
    assert len(rest['devices']) == 1 and 'devices_links' not in rest


def test_unknown_device_type_lists_nothing(pg_app):
    _odd_devices()
    assert pg_app.get('/v2/devices?type=GPU', headers=ADMIN).body == \
        b'{"devices": []}'


@pytest.mark.parametrize('version', ['2.0', '2.5', microversion.TOPOLOGY,
                                     microversion.DEVICE_HEALTH])
def test_deployable_list_is_the_deployable_views(pg_app, version):
    device = add_device()
    placed = add_deployable(device, attributes=[('rc', 'FPGA'),
                                                ('trait0', ODD_TEXT)])
    with session.writer() as s:
        s.query(models.Deployable).filter_by(id=placed.id).update(
            {'numa_node': 6, 'local_cpulist': '24-27,56-59', 'socket': 1,
             'pcie_root': 'pci0000:c0', 'pci_bus_id': '0000:c1:02.0'})
    add_deployable(device, name=ODD_TEXT,
                   attributes=[('rc', 'FPGA'), ('trait0', ODD_TEXT)])
    sick = add_deployable(device, name=ASCII_TEXT)
    with session.writer() as s:
        s.query(models.Deployable).filter_by(id=sick.id).update(
            {'health': 'recovering', 'health_reason': ODD_TEXT,
             'health_since': datetime.datetime(2026, 1, 2, 3, 4, 5)})
    _assert_list_is_the_views(pg_app, 'deployables', 'deployables', version)


@pytest.mark.parametrize('version', ['2.0', '2.1', microversion.TOPOLOGY])
def test_arq_list_is_the_arq_views(pg_app, version):
    device = add_device()
    handle = add_handle(add_deployable(device))
    create_profile(pg_app, ADMIN)
    arqs = [a['uuid'] for a in create_arqs(pg_app, ADMIN).json['arqs']
            + create_arqs(pg_app, ADMIN).json['arqs']]
    set_arq(arqs[0], state='Bound', hostname='host1',
            device_rp_uuid='4f9b1b57-6a0b-4a8c-8a3a-9a0d2cb1c0de',
            instance_uuid='0b6e8e8e-4c2a-4b7f-9a55-33d7b2a3e0a1',
            attach_handle_id=handle.id, error=ODD_TEXT)
    set_arq(arqs[1], error=ASCII_TEXT)
    _assert_list_is_the_views(pg_app, 'accelerator_requests', 'arqs',
                              version)


def test_hrefs_from_a_hostile_host_header_are_escaped(pg_app):
    # The href's prefix is the request's URL (the Host header): it goes
    # into each row's text (db/sql/json_text.py) escaped as a value.
    _odd_devices()
    headers = dict(_headers('2.5'), Host='evil"\\%s%n.example:80')
    listed = pg_app.get('/v2/devices', headers=headers)
    hrefs = {d['links'][0]['href'] for d in listed.json['devices']}
    assert len(hrefs) == 4
    assert all(h.startswith('http://evil"\\%s%n.example/v2/devices/')
               for h in hrefs)
    one = listed.json['devices'][0]['uuid']
    view = pg_app.get('/v2/devices/' + one, headers=headers).body
    assert view in listed.body

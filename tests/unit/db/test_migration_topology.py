"""Migration 0011 (topology) on a database of the release before it:
rows kept, every new column NULL (unknown, never node 0), and the next
report fills them."""
import sqlalchemy as sa

from cyborg_lite.db import migration
from cyborg_lite.db.sql import session

BEFORE = '0010'
TOPOLOGY = {'numa_node', 'local_cpulist', 'socket', 'pcie_root'}


def _columns(url, table):
    return {c['name'] for c in sa.inspect(
        session.get_engine(url=url)).get_columns(table)}


def test_rows_of_the_previous_release_survive_with_unknown_places(db_url,
                                                                  conf):
    migration.upgrade(BEFORE, url=db_url)
    assert not TOPOLOGY & _columns(db_url, 'devices')
    with session.get_engine(url=db_url).begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO devices (uuid, type, vendor, model, hostname, "
            "driver_name, identity, pci_address, status, health, version, "
            "rp_uuid, created_at) VALUES ('d1', 'FPGA', '0x8086', 'm', "
            "'host1', 'fake', '0000:5e:00.0', '0000:5e:00.0', 'enabled', "
            "'healthy', 3, 'rp-d1', CURRENT_TIMESTAMP)"))
        device_id = conn.execute(sa.text(
            "SELECT id FROM devices")).scalar()
        conn.execute(sa.text(
            "INSERT INTO deployables (uuid, device_id, name, "
            "num_accelerators, driver_name, rp_uuid, version, "
            "local_memory_mb, device_state, cleaning_attempts, created_at) "
            "VALUES ('r1', :device, 'host1_0000:5e:00.0_region0', 1, "
            "'fake', 'rp-r1', 2, 4096, 'allocated', 0, CURRENT_TIMESTAMP)"),
            {'device': device_id})

    migration.upgrade(url=db_url)

    assert TOPOLOGY | {'pci_bus_id'} <= _columns(db_url, 'deployables')
    with session.get_engine(url=db_url).connect() as conn:
        device = conn.execute(sa.text(
            'SELECT uuid, rp_uuid, version, numa_node, local_cpulist, '
            'socket, pcie_root FROM devices')).one()
        region = conn.execute(sa.text(
            'SELECT uuid, rp_uuid, device_state, numa_node, pci_bus_id '
            'FROM deployables')).one()
        hosts = conn.execute(sa.text(
            'SELECT count(*) FROM host_topologies')).scalar()
    assert tuple(device) == ('d1', 'rp-d1', 3, None, None, None, None)
    assert tuple(region) == ('r1', 'rp-r1', 'allocated', None, None)
    assert hosts == 0

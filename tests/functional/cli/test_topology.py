"""``device show`` and ``deployable list --long`` show where devices and
regions sit (API microversion TOPOLOGY), with the real entry point
against the real API."""
import sqlalchemy as sa

from cyborg_lite.api import microversion
from cyborg_lite.cli import accelerator_requests
from cyborg_lite.cli import versioned
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.cli import conftest as c

PLACE = {'numa_node': 1, 'local_cpulist': '20-39,60-79', 'socket': 1,
         'pcie_root': 'pci0000:ae'}


def test_the_cli_asks_for_the_apis_topology_version():
    assert versioned.TOPOLOGY_API_VERSION == microversion.TOPOLOGY
    assert accelerator_requests.BIND_WAITS_API_VERSION == \
        microversion.BIND_WAITS


def test_device_show_and_deployable_list_long(cli):
    dev, [(region, _rp)] = c.add_device('host1', pci='0000:af:00.0')
    with session.writer() as s:
        s.execute(sa.update(models.Device.__table__).values(**PLACE))
        s.execute(sa.update(models.Deployable.__table__).values(
            pci_bus_id='0000:af:00.0', **PLACE))
    shown = cli('device', 'show', dev, '-f', 'json').json
    assert {k: shown[k] for k in PLACE} == PLACE
    assert shown['pci_bus_id'] == '0000:af:00.0'
    assert shown['unavailable_reasons'] == []
    [listed] = cli('deployable', 'list', '--long', '-f', 'json').json
    assert listed['uuid'] == region
    assert {k: listed[k] for k in PLACE} == PLACE
    [short] = cli('deployable', 'list', '-f', 'json').json
    assert 'numa_node' not in short

"""Serve the real API on a loopback port and run the real CLI entry points
(``cyborg-lite``, ``openstack``) against it, in this process (in_process.py
says why and which tests run them as processes)."""
import json
import os
import sys
import uuid

import pytest

from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.rpc import transport as rpc
from tests import servers
from tests.functional import in_process

BIN_DIR = os.path.dirname(sys.executable)
# The CLI must not pick up credentials or an endpoint from whoever runs
# the tests.
SCRUBBED_PREFIXES = ('OS_', 'CYBORG_LITE_')


def _build_app():
    # The whole WSGI stack (fault wrapping, noauth, microversions), as
    # cyborg-lite-api serves it: the CLI's error handling depends on it.
    from cyborg_lite.api import deploy
    return deploy.loadapp()


@pytest.fixture
def api_url(sqlite_db, conf):
    """URL of the real API app on loopback, over a migrated SQLite DB."""
    conf.set_override('auth_strategy', 'noauth', group='api')
    # In-memory RPC: the API's casts reach a conductor in this process.
    conf.set_override('transport_url', 'inproc://')
    # No conductor answers the publish of a device disable unless the
    # test asks for one (``conductor``): the API would wait 10 s for it.
    conf.set_override('publish_timeout', 0.1, group='api')
    with servers.serving(_build_app()) as url:
        yield url
    rpc.cleanup()


@pytest.fixture
def conductor(api_url, conf):
    """A real conductor RPC server on the API's in-memory transport, so
    binds the API casts really happen."""
    conf.clear_override('publish_timeout', group='api')
    server = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-cli',
                            [conductor_manager.ConductorManager('cond-cli')])
    server.start()
    yield
    server.stop()
    server.wait()


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(SCRUBBED_PREFIXES)}
    env.update(extra)
    return env


class Result:
    def __init__(self, rc, stdout, stderr):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    @property
    def json(self):
        assert self.rc == 0, self.stderr
        return json.loads(self.stdout)

    def __repr__(self):
        return 'rc=%s stdout=%r stderr=%r' % (self.rc, self.stdout,
                                              self.stderr)


def run(program, args, env, input=None):
    return Result(*in_process.run(program, args, env, input))


@pytest.fixture
def cli(api_url):
    """``cli('device', 'list', '-f', 'json')`` runs the real cyborg-lite
    with CYBORG_LITE_URL pointing at the API."""
    env = clean_env(CYBORG_LITE_URL=api_url)
    return lambda *args: run('cyborg-lite', args, env)


@pytest.fixture
def openstack(api_url):
    """The real ``openstack`` command, noauth against the API."""
    env = clean_env()
    base = ['--os-auth-type', 'none', '--os-endpoint', api_url]
    return lambda *args: run('openstack', base + list(args), env)


def _add_region(s, dev, hostname, pci, index):
    dep = models.Deployable(
        uuid=str(uuid.uuid4()), device_id=dev.id,
        name='%s_%s_region%d' % (hostname, pci, index), driver_name='fake',
        rp_uuid=str(uuid.uuid4()), region_type='ifc-%d' % index,
        num_accelerators=1)
    s.add(dep)
    s.flush()
    # What a bind needs: the resource class and a free attach handle.
    s.add(models.Attribute(uuid=str(uuid.uuid4()), deployable_id=dep.id,
                           key='rc', value='FPGA'))
    s.add(models.AttachHandle(
        uuid=str(uuid.uuid4()), deployable_id=dep.id, attach_type='PCI',
        attach_info=json.dumps({'domain': '0000', 'bus': '5e',
                                'device': '00', 'function': str(index)})))
    return dep


def add_device(hostname='host1', pci='0000:5e:00.0', type_='FPGA',
               vendor='8086', model='PAC Arria10', regions=1):
    """A device with ``regions`` deployables, straight into the DB (the
    conductor's job in production; here only the CLI is under test).

    Returns (device uuid, [(deployable uuid, its rp uuid), ...]).
    """
    with session.writer() as s:
        dev = models.Device(uuid=str(uuid.uuid4()), type=type_,
                            vendor=vendor, model=model, hostname=hostname,
                            driver_name='fake', identity=pci,
                            pci_address=pci)
        s.add(dev)
        s.flush()
        deps = [_add_region(s, dev, hostname, pci, i)
                for i in range(regions)]
        return dev.uuid, [(d.uuid, d.rp_uuid) for d in deps]

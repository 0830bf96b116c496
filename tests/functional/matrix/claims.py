"""A ResourceClaim the scheduler allocated on a matrix host, and what
its Prepare wrote: the CDI spec's devices, their environment."""
import json

from cyborg_lite.agent.dra import cdi
from tests import waiting
from tests.unit.kubernetes import resource_claims as rc


def allocated(host, name, devices):
    """Put a claim ``name`` allocated ``devices`` ((request, device
    name) each) of ``host``'s pool; the claim."""
    claim = rc.allocated_claim(name, list(devices),
                               namespace=host.namespace, pool=host.host)
    host.services.apiserver.put_claim(claim)
    return claim


def cdi_devices(host, claim):
    """The devices of the CDI spec Prepare wrote for ``claim``."""
    path = cdi.spec_path(host.conf.kubernetes.cdi_dir,
                         host.conf.kubernetes.driver_name,
                         claim['metadata']['uid'])
    with open(path) as f:
        return json.load(f)['devices']


def env(device):
    """{name: value} of a CDI device's environment."""
    return dict(e.split('=', 1) for e in device['containerEdits']['env'])


def wait_available(host, dep):
    """The deployable once its clean ended (device_state available)."""
    return waiting.read_until(
        lambda: host.call('GET', '/deployables/' + dep['uuid'], 200).json(),
        lambda d: d['device_state'] == 'available', 20,
        what='%s available' % dep['name'])

"""ResourceClaims as the scheduler leaves them once allocated, for the
kubelet plugin tests (valid for the strict 1.34-1.37 schemas)."""
import uuid

from tests.unit.kubernetes import inventories
from tests.unit.kubernetes import schemas

DRIVER = inventories.DRIVER
API_VERSION = DRIVER + '/v1alpha1'


def fpga_config(requests=(), source='FromClaim', **parameters):
    entry = {'source': source, 'opaque': {'driver': DRIVER, 'parameters': dict(
        {'apiVersion': API_VERSION, 'kind': 'FpgaConfig'}, **parameters)}}
    if requests:
        entry['requests'] = list(requests)
    return entry


def allocated_claim(name, devices, config=(), namespace='default',
                    pool='node-1', driver=DRIVER, uid=None, pods=()):
    """``devices``: (request name, device name) pairs; ``pods``: the pod
    names the claim is reserved for (status.reservedFor)."""
    requests = sorted({r.split('/')[0] for r, _ in devices})
    claim = {
        'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
        'metadata': {'name': name, 'namespace': namespace,
                     'uid': uid or str(uuid.uuid4())},
        'spec': {'devices': {
            'requests': [{'name': r, 'exactly': {
                'deviceClassName': 'fpga-region.' + DRIVER}}
                for r in requests],
            'config': [{k: v for k, v in c.items() if k != 'source'}
                       for c in config if c['source'] == 'FromClaim']}},
        'status': {'allocation': {'devices': {
            'results': [{'request': r, 'driver': driver, 'pool': pool,
                         'device': d} for r, d in devices],
            'config': list(config)}}},
    }
    if pods:
        claim['status']['reservedFor'] = [
            {'resource': 'pods', 'name': pod, 'uid': str(uuid.uuid4())}
            for pod in pods]
    errors = schemas.schema_errors(claim)
    assert errors == [], errors
    return claim


def unallocated(claim):
    return dict(claim, status={})


def ref(claim):
    meta = claim['metadata']
    return meta['namespace'], meta['name'], meta['uid']

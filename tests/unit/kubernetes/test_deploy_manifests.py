"""The operator's manifests in deploy/kubernetes/: every object valid for
the strict schemas of Kubernetes 1.34-1.37, every FpgaConfig accepted by
our parser, every CEL selector naming only attributes and capacities the
conductor publishes, and the RBAC granting what the services call."""
import glob
import os
import re

import pytest
import yaml

from cyborg_lite.kubernetes import claim_config
from cyborg_lite.conf import kubernetes as k8s_conf
from cyborg_lite.kubernetes import slice_sync
from cyborg_lite.kubernetes import slice_watch
from cyborg_lite.kubernetes import slices
from tests import waiting
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories
from tests.unit.kubernetes import schemas

DEPLOY = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'deploy',
                      'kubernetes')
DRIVER = next(o.default for o in k8s_conf.OPTS if o.name == 'driver_name')
_CEL_NAME = re.compile(r'device\.(attributes|capacity)\["([^"]+)"\]\.'
                       r'([A-Za-z_][A-Za-z0-9_]*)')


def _objects():
    found = []
    for path in sorted(glob.glob(os.path.join(DEPLOY, '*.yaml'))):
        with open(path) as f:
            found.extend((os.path.basename(path), obj)
                         for obj in yaml.safe_load_all(f) if obj)
    return found


def _walk(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            yield obj[key]
        for value in obj.values():
            yield from _walk(value, key)
    elif isinstance(obj, list):
        for value in obj:
            yield from _walk(value, key)


def _published_names():
    """(attribute names, capacity names) of a host with FPGAs and a GPU,
    as the builder writes them."""
    host = inventories.host(with_gpu=True)
    attributes, capacity = set(), set()
    for obj in slices.build_slices(host, DRIVER):
        for device in obj['spec']['devices']:
            attributes.update(device['attributes'])
            capacity.update(device['capacity'])
    return attributes, capacity


def test_the_manifests_are_all_there():
    kinds = sorted({obj['kind'] for _, obj in _objects()})
    assert kinds == ['ClusterRole', 'ClusterRoleBinding', 'ConfigMap',
                     'DaemonSet', 'DeviceClass', 'Namespace', 'Pod',
                     'ResourceClaimTemplate', 'ServiceAccount']


@pytest.mark.parametrize('name,obj', _objects(),
                         ids=lambda v: v if isinstance(v, str) else
                         v['kind'] + '/' + v['metadata']['name'])
def test_each_object_is_valid_for_kubernetes_1_34_to_1_37(name, obj):
    assert schemas.schema_errors(obj) == []


def test_cel_names_only_what_the_conductor_publishes():
    attributes, capacity = _published_names()
    expressions = [e for _, obj in _objects()
                   for cel in _walk(obj, 'cel') for e in [cel['expression']]]
    assert len(expressions) >= 5
    used = set()
    for expression in expressions:
        assert 'device.driver' not in expression or \
            'device.driver == "%s"' % DRIVER in expression
        for kind, domain, name in _CEL_NAME.findall(expression):
            assert domain == DRIVER, expression
            assert name in (attributes if kind == 'attributes'
                            else capacity), (kind, name)
            used.add((kind, name))
    assert {('attributes', 'type'), ('attributes', 'regionType'),
            ('capacity', 'localMemory')} <= used


def test_every_fpga_config_is_accepted_by_the_plugin():
    opaque = [o for _, obj in _objects() for o in _walk(obj, 'opaque')]
    assert len(opaque) == 3
    for entry in opaque:
        assert entry['driver'] == DRIVER
        claim_config.parse(entry['parameters'], DRIVER)


def test_the_warm_template_tries_the_running_function_first():
    (template,) = [obj for name, obj in _objects()
                   if name == 'warm-claim.yaml']
    (request,) = template['spec']['spec']['devices']['requests']
    subrequests = request['firstAvailable']
    assert [s['name'] for s in subrequests] == ['warm', 'blank', 'any']
    function_id = template['spec']['spec']['devices']['config'][0][
        'opaque']['parameters']['functionID']
    warm, blank, _any = [s['selectors'][0]['cel']['expression']
                         for s in subrequests]
    assert '.functionID == "%s"' % function_id in warm
    assert '.functionID == ""' in blank
    # Each config entry covers the subrequests of the request it names.
    for sub in subrequests:
        assert claim_config.for_request(
            [dict(template['spec']['spec']['devices']['config'][0],
                  source='FromClaim')], 'fpga/' + sub['name'],
            DRIVER).function_id == function_id


def _role(name):
    (role,) = [obj for _, obj in _objects()
               if obj['kind'] == 'ClusterRole' and
               obj['metadata']['name'] == name]
    return {(group, resource, verb) for rule in role['rules']
            for group in rule['apiGroups'] for resource in rule['resources']
            for verb in rule['verbs']}


_VERBS = {'GET': 'get', 'POST': 'create', 'PUT': 'update',
          'DELETE': 'delete'}


def _needed(requests):
    needed = set()
    for method, path in requests:
        watch = path.endswith('?watch')
        path = path.split('?')[0]
        if '/resourceslices' in path:
            verb = 'list' if method == 'GET' and path.endswith(
                'resourceslices') else _VERBS[method]
            verb = 'watch' if watch else verb
            needed.add(('resource.k8s.io', 'resourceslices', verb))
        elif '/nodes/' in path:
            needed.add(('', 'nodes', _VERBS[method]))
        elif '/resourceclaims/' in path:
            needed.add(('resource.k8s.io', 'resourceclaims', _VERBS[method]))
    return needed


def test_the_conductor_role_grants_every_call_of_a_sync_and_watch():
    server = fake_apiserver.FakeKubeApiServer().start()
    client = server.api_client()
    watch = None
    try:
        server.add_node('node-1')
        sync = slice_sync.SliceSync(client, DRIVER)
        watch = slice_watch.SliceWatch(client, DRIVER, {'node-1'},
                                       lambda node: None, sync.own).start()
        host = inventories.host(cards=2, regions=40)       # two slices
        sync.sync(host)
        sync.sync(inventories.change_region(host, 0, 0,
                                            unavailable=('cleaning',)))
        sync.sync(inventories.host(cards=1, regions=2))    # one deleted
        assert waiting.until(lambda: server.watches == 1)
        needed = _needed(server.requests)
    finally:
        if watch is not None:
            watch.stop()
        client.close()
        server.stop()
    assert {v for _, _, v in needed} == {'list', 'watch', 'create',
                                         'update', 'delete', 'get'}
    assert needed <= _role('cyborg-lite-conductor')


def test_the_conductor_role_grants_the_binding_conditions_calls():
    # kubernetes/claim_watch.py lists and watches every namespace's
    # claims; kubernetes/binding.py reads one and replaces its status
    # (status.devices: resourceclaims/driver from 1.36, as a controller
    # serving any node).
    role = _role('cyborg-lite-conductor')
    assert {('resource.k8s.io', 'resourceclaims', verb)
            for verb in ('get', 'list', 'watch')} <= role
    assert ('resource.k8s.io', 'resourceclaims/status', 'update') in role
    assert ('resource.k8s.io', 'resourceclaims/driver',
            'arbitrary-node:update') in role


def test_the_agent_role_reads_claims_only():
    assert _role('cyborg-lite-agent') == {
        ('resource.k8s.io', 'resourceclaims', 'get')}


def test_the_conductor_role_grants_every_call_of_the_claim_explainer():
    from cyborg_lite.kubernetes import claim_events
    from tests.unit.kubernetes import test_claim_events as claims
    server = fake_apiserver.FakeKubeApiServer().start()
    client = server.api_client()
    try:
        server.add_node('node-1')
        claims._setup(server, slice_sync.SliceSync(client, DRIVER))
        server.write_claim(claims.pending_claim('c', [claims.NO_SUCH_TYPE]))
        server.requests.clear()
        assert claim_events.ClaimExplainer(client, DRIVER, 'c1').run_once()
        needed = set()
        for method, path in server.requests:
            group = path.split('/')[2]
            resource = path.rsplit('/', 1)[1]
            needed.add((group, resource,
                        'list' if method == 'GET' else _VERBS[method]))
    finally:
        client.close()
        server.stop()
    assert needed == {('resource.k8s.io', 'resourceclaims', 'list'),
                      ('resource.k8s.io', 'deviceclasses', 'list'),
                      ('resource.k8s.io', 'resourceslices', 'list'),
                      ('events.k8s.io', 'events', 'create')}
    assert needed <= _role('cyborg-lite-conductor')

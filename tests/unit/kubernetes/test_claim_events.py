"""A pending ResourceClaim our devices cannot serve gets one Event naming
the request and its first failing selector or taint: the real client
against the apiserver stand-in, our slices published by the real
SliceSync, the DeviceClasses of deploy/kubernetes/deviceclasses.yaml."""
import os
import uuid

import yaml

from cyborg_lite.kubernetes import claim_events
from tests.unit.kubernetes import inventories
from tests.unit.kubernetes import resource_claims
from tests.unit.kubernetes import schemas

DRIVER = inventories.DRIVER
CLASSES = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                       'deploy', 'kubernetes', 'deviceclasses.yaml')
NO_SUCH_TYPE = ('device.attributes["%s"].regionType == "cc03"' % DRIVER)
EVENTS_PATH = '/apis/events.k8s.io/v1/namespaces/ns-a/events'


def _setup(apiserver, sync):
    with open(CLASSES) as f:
        for device_class in yaml.safe_load_all(f):
            apiserver.put_device_class(device_class)
    sync.sync(inventories.host())


def pending_claim(name, selectors=(), count=1, tolerations=None,
                  device_class='fpga-region.' + DRIVER):
    exactly = {'deviceClassName': device_class, 'count': count,
               'allocationMode': 'ExactCount'}
    if selectors:
        exactly['selectors'] = [{'cel': {'expression': e}}
                                for e in selectors]
    if tolerations:
        exactly['tolerations'] = tolerations
    claim = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
             'metadata': {'name': name, 'namespace': 'ns-a',
                          'uid': str(uuid.uuid4())},
             'spec': {'devices': {'requests': [
                 {'name': 'fpga', 'exactly': exactly}]}}}
    assert schemas.schema_errors(claim) == []
    return claim


def _explainer(apiserver):
    return claim_events.ClaimExplainer(apiserver.api_client(), DRIVER,
                                       'conductor-1')


def _posts(apiserver):
    return [r for r in apiserver.requests if r == ('POST', EVENTS_PATH)]


def test_the_event_of_a_selector_matching_nothing_names_it(apiserver, sync):
    _setup(apiserver, sync)
    apiserver.write_claim(pending_claim('train', [
        'device.attributes["%s"].programmable' % DRIVER, NO_SUCH_TYPE]))
    explainer = _explainer(apiserver)
    assert len(explainer.run_once()) == 1
    (event,) = apiserver.k8s_events
    claim = apiserver.claims[('ns-a', 'train')]
    assert event['regarding']['uid'] == claim['metadata']['uid']
    assert event['regarding']['kind'] == 'ResourceClaim'
    assert event['reason'] == 'NoMatchingDevice'
    assert event['type'] == 'Warning'
    # The request, the selector (the class's passed: 4 regions), its text.
    assert event['note'].startswith('fpga: selector 1 of request fpga ')
    assert NO_SUCH_TYPE in event['note']
    assert 'matches none of the 4 devices left' in event['note']


def test_an_unchanged_claim_gets_no_second_event(apiserver, sync):
    _setup(apiserver, sync)
    claim = pending_claim('train', [NO_SUCH_TYPE])
    apiserver.write_claim(claim)
    explainer = _explainer(apiserver)
    assert len(explainer.run_once()) == 1
    assert explainer.run_once() == []
    assert len(_posts(apiserver)) == 1
    # Another process (a second conductor, a restart) finds it posted.
    assert _explainer(apiserver).run_once() == []
    assert len(apiserver.k8s_events) == 1
    # A change of the claim is a new version: explained again.
    claim['metadata']['labels'] = {'try': '2'}
    apiserver.write_claim(claim)
    assert len(explainer.run_once()) == 1
    assert len(apiserver.k8s_events) == 2


def test_an_allocated_claim_gets_none(apiserver, sync):
    _setup(apiserver, sync)
    claim = pending_claim('done', [NO_SUCH_TYPE])
    claim['status'] = resource_claims.allocated_claim(
        'done', [('fpga', 'x')], namespace='ns-a')['status']
    apiserver.write_claim(claim)
    assert _explainer(apiserver).run_once() == []
    assert _posts(apiserver) == []


def test_a_claim_our_devices_can_serve_gets_none(apiserver, sync):
    _setup(apiserver, sync)
    apiserver.write_claim(pending_claim('fits', count=4))
    assert _explainer(apiserver).run_once() == []
    assert _posts(apiserver) == []


def test_a_count_beyond_what_matches_is_named(apiserver, sync):
    _setup(apiserver, sync)
    apiserver.write_claim(pending_claim('many', count=5))
    _explainer(apiserver).run_once()
    (event,) = apiserver.k8s_events
    assert event['note'] == 'fpga: asks for 5 devices; 4 match'


def test_an_untolerated_taint_is_named(apiserver, sync):
    _setup(apiserver, sync)
    host = inventories.host()
    for card in range(2):
        host = inventories.change_all_regions(
            host, card, unavailable=('unhealthy',),
            health_signal='catfatal_errors')
    sync.sync(host)
    apiserver.write_claim(pending_claim('sick'))
    _explainer(apiserver).run_once()
    (event,) = apiserver.k8s_events
    assert 'has a taint it does not tolerate, first %s/unhealthy=' \
        'catfatal_errors:NoSchedule' % DRIVER in event['note']
    # Tolerated, it is not blocked by it.
    apiserver.write_claim(pending_claim('brave', tolerations=[
        {'key': DRIVER + '/unhealthy', 'operator': 'Exists'}]))
    _explainer(apiserver).run_once()
    assert len(apiserver.k8s_events) == 1


def test_a_claim_of_another_drivers_class_gets_none(apiserver, sync):
    _setup(apiserver, sync)
    apiserver.put_device_class({
        'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
        'metadata': {'name': 'gpu.example.com'},
        'spec': {'selectors': [{'cel': {
            'expression': 'device.driver == "gpu.example.com"'}}]}})
    apiserver.write_claim(pending_claim('theirs', [NO_SUCH_TYPE],
                                      device_class='gpu.example.com'))
    assert _explainer(apiserver).run_once() == []


def test_the_sinks_periodic_task_explains_quietly_through_an_outage(
        apiserver, sync, conf):
    from cyborg_lite.kubernetes import sink as sink_mod
    _setup(apiserver, sync)
    apiserver.write_claim(pending_claim('train', [NO_SUCH_TYPE]))
    client = apiserver.api_client()
    sink = sink_mod.KubernetesSink(client, conf)
    assert len(sink.explain_claims()) == 1
    apiserver.stop()
    assert sink.explain_claims() == []
    client.close()

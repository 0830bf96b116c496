"""A conductor killed after it committed a change of what a host offers
and before it published it: the publish request committed with the
change makes the next conductor's periodic task publish the host, against
the real openstack-placement.

The killed conductor is one without sinks (it publishes nothing); each
test checks Placement still has the old offer, then runs what another
conductor runs periodically (``Publisher.publish_requested``). Without
the request, that publishes nothing and Placement stays stale until the
host changes again.
"""
import uuid

import pytest

from cyborg_lite.common import context
from cyborg_lite.conductor import cleaning as cleaning_mod
from cyborg_lite.conductor import manager as manager_mod
from cyborg_lite.conductor import publishing
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import publish_requests
from cyborg_lite.placement import sink as sink_mod
from tests.functional.placement import fake_host
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.conductor import programming_flow_helpers as flow_helpers

NEW_FUNCTION = 'c0ffee00' * 4
NEW_TRAIT = 'CUSTOM_FUNCTION_ID_' + NEW_FUNCTION.upper()


@pytest.fixture
def host(placement, configured, conf, sqlite_db, hostname, tmp_path):
    configured(placement)
    fake_host.configure_card(conf, tmp_path / 'fake_fpga', sriov=True)
    host = fake_host.Host(conf, placement, hostname)
    assert host.report()['changed']
    # The publish after the report served its request.
    assert publish_requests.pending() == {}
    return host


@pytest.fixture
def publisher(host, conf):
    return publishing.Publisher(
        [sink_mod.PlacementSink(host.placement, conf)])


@pytest.fixture
def next_conductor(host, conf):
    """What another conductor's periodic task runs (nothing in memory)."""
    publisher = publishing.Publisher(
        [sink_mod.PlacementSink(host.placement, conf)])

    def run():
        served = publisher.publish_requested()
        assert publish_requests.pending() == {}
        return served
    return run


def _region(host, name='region0'):
    [row] = [d for d in devices_db.host_rows(host.hostname).deployables
             if d.name.endswith('_' + name)]
    return row


def test_a_report_published_by_the_next_conductor(host, next_conductor):
    entry = host.entry()
    entry['devices'][0]['deployables'][0]['function_id'] = NEW_FUNCTION
    killed = manager_mod.ConductorManager('killed')
    ack = killed.report(context.get_admin_context(), host.hostname, [entry])
    assert ack['changed'] and ack['updated'] == 1
    assert NEW_TRAIT not in host.traits()['region0']

    assert next_conductor() == [host.hostname]
    assert NEW_TRAIT in host.traits()['region0']


def test_a_loaded_function_published_by_the_next_conductor(
        host, next_conductor):
    region = _region(host)
    bitstream = add_bitstream(region_type=region.region_type,
                              function_id=NEW_FUNCTION)
    flow, _agents = flow_helpers.make_flow()   # after_success: none
    job = flow.program(context.get_admin_context(), bitstream.uuid,
                       region.uuid)
    flow_helpers.walk(flow, job['uuid'])
    flow.progress(job['uuid'], 'succeeded', function_id=NEW_FUNCTION)
    assert NEW_TRAIT not in host.traits()['region0']

    assert next_conductor() == [host.hostname]
    assert NEW_TRAIT in host.traits()['region0']


def test_a_cleaned_region_offered_again_by_the_next_conductor(
        host, publisher, next_conductor):
    region = _region(host)
    # An operator's clean; the cleaning flow publishes the host before
    # the wipe begins: reserved in Placement.
    cleaning_db.reclean(region.uuid)
    started = cleaning_db.begin(region.id)
    publisher.publish(host.hostname)
    assert host.reserved()['region0']['FPGA'] == 1
    # The agent's wipe ends; its conductor dies before publishing.
    killed = cleaning_mod.CleaningFlow(agent_api=object())
    assert killed.progress(region.uuid, started.cleaning_uuid,
                           'available')['device_state'] == 'available'
    assert host.reserved()['region0']['FPGA'] == 1

    assert next_conductor() == [host.hostname]
    assert host.reserved()['region0']['FPGA'] == 0


def test_a_clean_asked_for_requests_its_publish_and_a_try_nothing(host):
    # An idle region taken away until wiped must reach the schedulers
    # whatever happens to the conductor; a try that starts changes no
    # offer (the region is hidden already).
    region = _region(host)
    before = publish_requests.pending().get(host.hostname, 0)
    cleaning_db.reclean(region.uuid)
    requested = publish_requests.pending()
    assert list(requested) == [host.hostname]
    assert requested[host.hostname] > before
    assert cleaning_db.begin(region.id) is not None
    assert publish_requests.pending() == requested


def test_providers_held_by_allocations_are_deleted_by_the_next_conductor(
        host, publisher, next_conductor):
    [first] = host.candidates()[:1]
    consumer = str(uuid.uuid4())
    host.allocate(consumer, first)
    # The card is gone from the host; Nova's allocation still holds its
    # region: Placement keeps it (reserved) and the request stays.
    entry = host.entry()
    entry['devices'] = []
    dying = manager_mod.ConductorManager(
        'dying', after_report=publisher.publish_host, publisher=publisher)
    assert dying.report(context.get_admin_context(), host.hostname,
                        [entry])['deleted'] > 0
    assert list(publish_requests.pending()) == [host.hostname]
    # The root, the card's NUMA node, the card, the region.
    assert len(_tree(host)) == 4
    # That conductor dies; the instance is deleted.
    host.placement.delete('/allocations/%s' % consumer)

    assert next_conductor() == [host.hostname]
    assert _tree(host) == [host.root]


def _tree(host):
    return [rp['uuid'] for rp in host.placement.get(
        '/resource_providers?in_tree=%s' % host.root)['resource_providers']]

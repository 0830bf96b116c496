"""conductor/cleaning.py with the agents' side recorded (what was sent to
which host) and the publishing hook recorded (which host, when)."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import cleaning
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h


class RecordingAgents:
    def __init__(self):
        self.sent = []

    def clean_region(self, ctxt, hostname, request):
        self.sent.append((hostname, request))


@pytest.fixture
def flow(db):
    published = []
    flow = cleaning.CleaningFlow(agent_api=RecordingAgents(),
                                 after_change=published.append)
    flow.published = published
    return flow


def _released(driver_name='fake', hostname='host1'):
    region = h.make_region(hostname=hostname)
    if driver_name != 'fake':
        with session.writer() as s:
            dep = s.get(models.Deployable, region['deployable_id'])
            s.get(models.Device, dep.device_id).driver_name = driver_name
    arq_uuid = h.make_arq()
    bind.bind_arqs(None, {arq_uuid: h.binding(region, hostname)},
                   notifier=h.RecordingNotifier())
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    return region


def _row(region):
    row, _attributes = deployables_db.get_deployable(region['deployable_uuid'])
    return row


def _state(region):
    return _row(region).device_state


def test_a_released_region_is_sent_to_its_agent_and_its_host_published(
        flow):
    region = _released()

    assert flow.start(['host1']) == [region['deployable_uuid']]

    [(hostname, request)] = flow.agent_api.sent
    assert hostname == 'host1'
    assert request['deployable_uuid'] == region['deployable_uuid']
    assert request['driver'] == 'fake'
    assert request['deployable_name'].startswith('region')
    assert request['cleaning_uuid'] == _row(region).cleaning_uuid
    assert _state(region) == 'cleaning'
    assert flow.published == ['host1']
    # Sent once: a second start finds nothing waiting.
    assert flow.start(['host1']) == []
    assert len(flow.agent_api.sent) == 1


def test_a_driver_without_cleaning_makes_the_region_available_at_once(flow):
    region = _released(driver_name='pci')

    assert flow.start(['host1']) == [region['deployable_uuid']]

    assert _state(region) == 'available'
    assert flow.agent_api.sent == []
    assert flow.published == ['host1']


def test_a_driver_this_conductor_does_not_know_is_left_to_its_agent(flow):
    region = _released(driver_name='vendor_x')
    assert cleaning.driver_cleans('vendor_x') is None
    flow.start(['host1'])
    assert [r['driver'] for _h, r in flow.agent_api.sent] == ['vendor_x']
    assert _state(region) == 'cleaning'


def test_only_a_move_that_changes_what_a_host_offers_is_published(flow):
    region = _released()
    flow.start(['host1'])
    [(_host, request)] = flow.agent_api.sent
    del flow.published[:]
    dep_uuid, try_uuid = region['deployable_uuid'], request['cleaning_uuid']

    flow.progress(dep_uuid, try_uuid, 'cleaning')
    assert flow.published == []
    assert flow.progress(dep_uuid, try_uuid, 'available') == {
        'uuid': dep_uuid, 'device_state': 'available', 'error': None}
    assert flow.published == ['host1']


def test_an_agent_error_keeps_the_region_reserved_with_the_reason(flow):
    region = _released()
    flow.start(['host1'])
    [(_host, request)] = flow.agent_api.sent
    del flow.published[:]

    result = flow.progress(region['deployable_uuid'],
                           request['cleaning_uuid'], 'error',
                           error='nvidia-smi -r: GPU in use')

    assert result['device_state'] == 'error'
    assert _state(region) == 'error'
    assert flow.published == []


def test_an_agent_cannot_report_other_states(flow):
    region = _released()
    with pytest.raises(exception.Invalid, match='allocated'):
        flow.progress(region['deployable_uuid'], 'x', 'allocated')


def test_periodic_task_sends_what_waits_on_every_host(flow):
    first = _released(hostname='host1')
    second = _released(hostname='host2')

    result = flow.reap_and_redispatch()

    assert sorted(result['dispatched']) == sorted(
        [first['deployable_uuid'], second['deployable_uuid']])
    assert sorted(host for host, _r in flow.agent_api.sent) == \
        ['host1', 'host2']
    assert sorted(flow.published) == ['host1', 'host2']


def test_a_region_an_agent_cannot_name_fails_with_the_reason(flow):
    region = _released()
    with session.writer() as s:
        s.get(models.Deployable, region['deployable_id']).name = 'odd-name'

    flow.start(['host1'])

    assert flow.agent_api.sent == []
    failed = _row(region)
    assert failed.device_state == 'error'
    assert 'not named <host>_<identity>_<region>' in failed.cleaning_error


def _unreported(region, note=True):
    """What db/inventory.py does as the region leaves (or rejoins) its
    host's scan: its function handed to vfio-pci (or given back)."""
    with session.writer() as s:
        if note:
            s.add(models.Attribute(
                uuid=uuids.new(), key=cleaning_db.UNREPORTED,
                deployable_id=region['deployable_id'], value='now'))
        else:
            s.query(models.Attribute).filter_by(
                key=cleaning_db.UNREPORTED).delete()


def _waits(region):
    with session.reader() as s:
        dep = s.get(models.Deployable, region['deployable_id'])
        return dep.device_state, dep.cleaning_error


def test_a_try_that_found_its_region_out_of_view_waits_again(flow):
    region = _released()
    flow.start(['host1'])
    [(_host, request)] = flow.agent_api.sent
    # The agent found it gone and reported its scan before the end.
    _unreported(region)

    result = flow.progress(region['deployable_uuid'],
                           request['cleaning_uuid'], 'error',
                           error='0000:5e:00.0 region0 is not in the scan')

    assert result['device_state'] == 'pending_cleaning'
    assert _waits(region) == ('pending_cleaning', cleaning_db.WAIT_REASON)
    # Neither the periodic task nor a start sends it while out of view.
    assert flow.reap_and_redispatch()['dispatched'] == []
    assert flow.start(['host1']) == []
    assert len(flow.agent_api.sent) == 1
    _unreported(region, note=False)
    assert flow.start(['host1']) == [region['deployable_uuid']]


def test_a_clean_asked_for_while_out_of_view_waits(flow):
    region = h.make_region()
    _unreported(region)

    cleaning_db.reclean(region['deployable_uuid'])

    assert _waits(region) == ('pending_cleaning', cleaning_db.WAIT_REASON)
    assert flow.start(['host1']) == []
    assert flow.agent_api.sent == []

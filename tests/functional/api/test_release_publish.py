"""A request that takes capacity away answers once a conductor has
published it and started the wipe (release, one call); a conductor of the
previous release, which has no release, is asked as it was then
(publish_hosts, a call, then start_cleaning); a request that gives
capacity back only asks. A conductor that cannot publish in time does not
fail the request: the change and its publish request stay."""
import logging

import oslo_messaging as messaging
import pytest

from cyborg_lite.conductor import bind
from cyborg_lite.db import publish_requests
from tests.functional.api.conftest import ADMIN
from tests.unit.conductor import bind_helpers as h

ARQS = '/v2/accelerator_requests'


@pytest.fixture
def bound(app):
    """A Bound ARQ of host1 holding a region's handle: (arq, instance)."""
    region = h.make_region(hostname='host1')
    arq_uuid = h.make_arq()
    binding = h.binding(region)
    assert bind.bind_arqs(None, {arq_uuid: binding},
                          notifier=h.RecordingNotifier()) == {
        arq_uuid: 'Bound'}
    return arq_uuid, binding['instance_uuid']


def _names(conductor):
    return [(c[0], c[2]) for c in conductor.calls]


@pytest.mark.parametrize('how', ['instance', 'uuid', 'path'])
def test_a_delete_publishes_the_released_region_then_wipes_it(
        app, conductor, bound, how):
    arq_uuid, instance = bound
    path = {'instance': '%s?instance=%s' % (ARQS, instance),
            'uuid': '%s?arqs=%s' % (ARQS, arq_uuid),
            'path': '%s/%s' % (ARQS, arq_uuid)}[how]
    app.delete(path, headers=ADMIN, status=204)
    assert _names(conductor) == [('release', (['host1'], ['host1']))]


def _previous_release(conductor):
    """The conductor answers release as one without RPC 1.9 does."""
    def release(ctxt, publish_hosts, clean_hosts, timeout=None):
        conductor.calls.append(('refused release', ctxt.project_id, None))
        raise messaging.UnsupportedVersion('1.9', method='release')
    conductor.release = release


@pytest.mark.parametrize('how', ['instance', 'uuid', 'path'])
def test_a_previous_release_conductor_is_asked_as_it_was(
        app, conductor, bound, how):
    _previous_release(conductor)
    arq_uuid, instance = bound
    path = {'instance': '%s?instance=%s' % (ARQS, instance),
            'uuid': '%s?arqs=%s' % (ARQS, arq_uuid),
            'path': '%s/%s' % (ARQS, arq_uuid)}[how]
    app.delete(path, headers=ADMIN, status=204)
    assert _names(conductor) == [('refused release', None),
                                 ('publish_hosts', ['host1']),
                                 ('start_cleaning', ['host1'])]


def test_an_unbind_publishes_the_released_region_then_wipes_it(
        app, conductor, bound):
    arq_uuid, _ = bound
    unbind = {arq_uuid: [{'op': 'remove', 'path': '/' + k} for k in
                         ('hostname', 'device_rp_uuid', 'instance_uuid')]}
    app.patch_json(ARQS, unbind, headers=ADMIN, status=202)
    assert h.get_arq(arq_uuid).state == 'Unbound'
    assert _names(conductor) == [('release', (['host1'], ['host1']))]


def test_an_unbind_asks_a_previous_release_conductor_as_it_was(
        app, conductor, bound):
    _previous_release(conductor)
    arq_uuid, _ = bound
    unbind = {arq_uuid: [{'op': 'remove', 'path': '/' + k} for k in
                         ('hostname', 'device_rp_uuid', 'instance_uuid')]}
    app.patch_json(ARQS, unbind, headers=ADMIN, status=202)
    assert h.get_arq(arq_uuid).state == 'Unbound'
    assert _names(conductor) == [('refused release', None),
                                 ('publish_hosts', ['host1']),
                                 ('start_cleaning', ['host1'])]


def test_a_conductor_that_does_not_answer_fails_no_delete(
        app, conductor, bound, caplog):
    def no_answer(ctxt, publish_hosts, clean_hosts, timeout=None):
        raise TimeoutError('no reply in %s s' % timeout)
    conductor.release = no_answer
    arq_uuid, instance = bound

    with caplog.at_level(logging.WARNING):
        app.delete('%s?instance=%s' % (ARQS, instance), headers=ADMIN,
                   status=204)

    assert 'No conductor released host1 in time' in caplog.text
    # Taken in the database, its publish left to the periodic task.
    assert 'host1' in publish_requests.pending()
    assert _names(conductor) == [('start_cleaning', ['host1'])]


def test_disable_publishes_before_it_answers_enable_only_asks(
        app, conductor):
    device = h.make_card(hostname='host1', regions=1)[0]['device_uuid']
    app.post('/v2/devices/%s/disable' % device, headers=ADMIN, status=200)
    assert _names(conductor) == [('publish_hosts', ['host1'])]
    app.post('/v2/devices/%s/enable' % device, headers=ADMIN, status=200)
    assert [c[0] for c in conductor.calls] == ['publish_hosts',
                                               'publish_requested']

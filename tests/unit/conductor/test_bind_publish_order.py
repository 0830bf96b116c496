"""A bind that changes what a scheduler is offered beyond Placement's own
count of the allocation (a Kubernetes host: the region's taint) is
published before the ARQ is Bound and Nova told; a bind elsewhere stays
one transaction. A bind on a provider offering the regions behind one PCI
function takes the one that may be bound."""
import sqlalchemy as sa

from cyborg_lite.conductor import bind
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h


def _region_state(region):
    with session.reader() as s:
        return s.scalar(sa.select(models.Deployable.device_state).where(
            models.Deployable.id == region['deployable_id']))


class _Publisher:
    """The conductor's publish hook, recording what the database held
    each time it was called."""

    def __init__(self, arq_uuid, region, during=None):
        self.arq_uuid, self.region, self.during = arq_uuid, region, during
        self.seen = []

    def __call__(self):
        arq = h.get_arq(self.arq_uuid)
        handle = h.handles_of(self.region)[0]
        self.seen.append((arq.state, arq.attach_handle_id == handle.id,
                          handle.in_use))
        if self.during is not None:
            self.during()


def test_on_a_kubernetes_host_the_claim_is_published_before_bound(db, conf):
    conf.set_override('hosts', ['host1'], group='kubernetes')
    region = h.make_region()
    arq_uuid = h.make_arq()
    publish = _Publisher(arq_uuid, region)
    notifier = h.RecordingNotifier()

    result = bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                            notifier=notifier, publish=publish)

    assert result == {arq_uuid: 'Bound'}
    # Published while BindStarted, the handle already claimed for it.
    assert publish.seen == [('BindStarted', True, True)]
    assert [e['status'] for e in notifier.events] == ['completed']
    h.check_no_handle_double_use()


def test_elsewhere_a_bind_is_one_transaction_and_publishes_nothing(db):
    region = h.make_region()
    arq_uuid = h.make_arq()
    publish = _Publisher(arq_uuid, region)
    assert bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                          notifier=h.RecordingNotifier(),
                          publish=publish) == {arq_uuid: 'Bound'}
    assert publish.seen == []
    assert publish_requests.pending() == {}


def test_a_held_claim_unbound_meanwhile_gives_its_handle_back(db, conf):
    conf.set_override('hosts', ['host1'], group='kubernetes')
    region = h.make_region()
    arq_uuid = h.make_arq()
    publish = _Publisher(arq_uuid, region,
                         during=lambda: arq_releases.unbind_all(
                             arqs_db.ALL, [arq_uuid]))
    notifier = h.RecordingNotifier()

    result = bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                            notifier=notifier, publish=publish)

    assert result == {arq_uuid: 'Unbound'}
    assert not h.handles_of(region)[0].in_use
    # Nobody used it, but the region was handed over: wiped before reuse.
    assert _region_state(region) == 'pending_cleaning'
    assert notifier.events == []
    h.check_no_handle_double_use()


def test_the_reaper_gives_back_the_handle_of_a_bind_that_died_holding_it(
        db, conf, monkeypatch):
    conf.set_override('hosts', ['host1'], group='kubernetes')
    region = h.make_region()
    arq_uuid = h.make_arq()
    [started], _ = arq_binds.begin_binds({arq_uuid: h.binding(region)},
                                       'cond-1')
    claimed = arq_binds.finish_bind(started, region['deployable_id'],
                                  region['deployable_uuid'])
    assert claimed.version is not None and h.handles_of(region)[0].in_use
    # The conductor dies here, before publishing and Bound.

    h.FakeDbClock(monkeypatch).advance(3600)
    reaped = arq_binds.reap_stale_binds(60, lambda taken_by: 'died')

    assert [u for u, _ in reaped] == [arq_uuid]
    arq = h.get_arq(arq_uuid)
    assert (arq.state, arq.attach_handle_id) == ('BindFailed', None)
    assert not h.handles_of(region)[0].in_use
    assert _region_state(region) == 'pending_cleaning'
    h.check_no_handle_double_use()


def _one_provider(card):
    """The rows as the report stores them for regions behind one PF: one
    provider (the card's) for every region."""
    with session.writer() as s:
        for region in card:
            s.execute(sa.update(models.Deployable)
                      .where(models.Deployable.id == region['deployable_id'])
                      .values(rp_uuid=region['device_rp_uuid']))
    return card[0]['device_rp_uuid']


def test_a_bind_on_one_pfs_provider_takes_a_region_that_may_be_bound(db):
    card = h.make_card(regions=2, sriov=False)
    rp_uuid = _one_provider(card)
    first, second = h.make_arq(), h.make_arq()
    binding = {'hostname': 'host1', 'device_rp_uuid': rp_uuid}

    assert bind.bind_arqs(None, {first: dict(binding, instance_uuid='i1')},
                          notifier=h.RecordingNotifier()) == {
        first: 'Bound'}
    assert h.get_arq(first).deployable_id == card[0]['deployable_id']

    result = bind.bind_arqs(None, {second: dict(binding, instance_uuid='i2')},
                            notifier=h.RecordingNotifier())

    assert result == {second: 'BindFailed'}
    error = h.get_arq(second).error
    assert 'no deployable behind resource provider %s' % rp_uuid in error
    assert 'region0: no free attach handle' in error
    assert 'region1: unavailable [handle_shared_in_use]' in error
    h.check_no_handle_double_use()

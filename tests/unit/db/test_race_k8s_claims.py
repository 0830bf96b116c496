"""A Nova bind and a Kubernetes claim racing for one region, on
PostgreSQL, with the first writer's transaction held open at its claim of
the attach handle: the second waits on the region's lock (seen in
pg_stat_activity, not by timing), then sees the first's commit and is
refused. Exactly one holds the region, whichever comes first.
"""
import threading

import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import arq_binds
from cyborg_lite.db import k8s_claims
from cyborg_lite.db import models
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from tests import waiting
from tests.unit.conductor import bind_helpers as h

pytestmark = pytest.mark.postgresql
CLAIM_UID = '0c1a1a00-0000-4000-8000-00000000000a'


def _lock_waiters(url):
    with session.get_engine(url).connect() as conn:
        return conn.scalar(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = "
            "current_database() AND wait_event_type = 'Lock'"))


def held_race(monkeypatch, url, first, second):
    """Run ``first`` until its claim of a handle, hold its transaction
    there, run ``second`` until it waits on a lock, then let both end;
    (first's result, second's) with exceptions as results."""
    reached, release = threading.Event(), threading.Event()
    armed = threading.local()

    def hold(table):
        if table == 'attach_handles' and getattr(armed, 'on', False):
            armed.on = False
            reached.set()
            release.wait(30)

    monkeypatch.setattr(conditional, 'before_update', hold)
    results = [None, None]

    def run(i, call, arm):
        armed.on = arm
        try:
            results[i] = call()
        except Exception as exc:  # the assertions look at it
            results[i] = exc

    one = threading.Thread(target=run, args=(0, first, True))
    one.start()
    assert reached.wait(30)
    two = threading.Thread(target=run, args=(1, second, False))
    two.start()
    try:
        assert waiting.until(lambda: _lock_waiters(url) >= 1)
    finally:
        release.set()
        one.join(60)
        two.join(60)
    return results


def _contenders():
    region = h.make_region()
    arq_uuid = h.make_arq()
    [started], refused = arq_binds.begin_binds({arq_uuid: h.binding(region)},
                                             'cond1')
    assert not refused

    def nova():
        return arq_binds.finish_bind(started, region['deployable_id'],
                                     region['deployable_uuid'])

    def kubernetes():
        return k8s_claims.claim(region['deployable_id'], CLAIM_UID, 'ns',
                                'claim', 'fpga-x-region0')
    return region, arq_uuid, nova, kubernetes


def _holders(region):
    with session.reader() as s:
        arqs = s.scalars(sa.select(models.AcceleratorRequest.uuid).where(
            models.AcceleratorRequest.state == 'Bound')).all()
        claims = s.scalars(sa.select(models.KubernetesClaimDevice.claim_uid)
                           .where(models.KubernetesClaimDevice.deployable_id
                                  == region['deployable_id'])).all()
        in_use = s.scalar(sa.select(sa.func.count()).where(
            models.AttachHandle.deployable_id == region['deployable_id'],
            models.AttachHandle.in_use.is_(True)))
    return list(arqs), list(claims), in_use


def test_nova_first_kubernetes_refused(pg_db, monkeypatch):
    region, arq_uuid, nova, kubernetes = _contenders()
    bound, claimed = held_race(monkeypatch, pg_db, nova, kubernetes)
    # Bound at once: no Kubernetes host whose slice must see it first.
    assert (bound.publish_hosts, bound.version) == (set(), None), bound
    assert isinstance(claimed, exception.ClaimRefused), claimed
    assert 'in use by %s' % arq_uuid in str(claimed)
    assert _holders(region) == ([arq_uuid], [], 1)


def test_kubernetes_first_nova_refused(pg_db, monkeypatch):
    region, arq_uuid, nova, kubernetes = _contenders()
    claimed, bound = held_race(monkeypatch, pg_db, kubernetes, nova)
    assert isinstance(claimed, k8s_claims.Claimed) and claimed.new
    assert isinstance(bound, exception.ArqBindFailed), bound
    assert 'kubernetes_claimed' in str(bound)
    assert _holders(region) == ([], [CLAIM_UID], 1)

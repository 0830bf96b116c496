"""A report's health: stored with its reason and the database's time of
the change, an unchanged one writing nothing, and the holders of a
device that turned unhealthy named in the log."""
import datetime
import logging

import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.conductor import report
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as bh
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARD = '0000:5e:00.0'
INSTANCE = '0b6e8e8e-4c2a-4b7f-9a55-33d7b2a3e0a1'


def _card(health='healthy', reason=None, region1=('healthy', None)):
    card = h.fpga(CARD)
    card.update(health=health, health_reason=reason)
    card['deployables'][1].update(health=region1[0],
                                  health_reason=region1[1])
    return card


def _send(card):
    return report.handle_report(HOST, [h.ok('fake', card)])


def _device():
    [device] = h.devices(HOST)
    return device


def _region(name):
    [dep] = [d for d in h.rows(models.Deployable)
             if d.name.endswith('_' + name)]
    return dep


def _age(model, row_id):
    """Move health_since back, so a later stamp is distinguishable."""
    with session.writer() as s:
        s.execute(sa.update(model).where(model.id == row_id).values(
            health_since=datetime.datetime(2000, 1, 1)))


def test_health_reason_and_since(db):
    _send(_card())
    device = _device()
    assert (device.health, device.health_reason) == ('healthy', None)
    assert device.health_since is not None
    _age(models.Device, device.id)

    ack = _send(_card('unhealthy', 'catfatal_errors 0x4'))
    assert ack['changed']
    moved = _device()
    assert (moved.health, moved.health_reason) == ('unhealthy',
                                                   'catfatal_errors 0x4')
    assert moved.health_since.year > 2000
    _age(models.Device, device.id)

    # The reason alone changes: since stays.
    _send(_card('unhealthy', 'temperature 97 °C ≥ crit 95 °C'))
    assert _device().health_reason == 'temperature 97 °C ≥ crit 95 °C'
    assert _device().health_since.year == 2000


def test_an_unchanged_report_with_health_writes_nothing(db):
    sick = _card('unhealthy', 'catfatal_errors 0x4',
                 region1=('recovering', 'port_errors 0x1 (cleared)'))
    _send(sick)
    with h.count_writes() as writes:
        for _ in range(3):
            assert not _send(sick)['changed']
    assert writes == []


def test_a_region_s_health(db):
    _send(_card())
    _age(models.Deployable, _region('region1').id)
    _send(_card(region1=('unhealthy', 'port_errors 0x1')))
    region = _region('region1')
    assert (region.health, region.health_reason) == ('unhealthy',
                                                     'port_errors 0x1')
    assert region.health_since.year > 2000
    assert _region('region0').health == 'healthy'


@pytest.mark.parametrize('bad', [
    {'health': 'sick'}, {'health_reason': 7}, {'health_reason': ''},
    {'health_reason': 'x' * 256}])
def test_a_bad_health_is_refused_whole(db, bad):
    card = _card()
    card.update(bad)
    with pytest.raises(exception.InvalidReport):
        _send(card)
    assert h.devices(HOST) == []
    region = _card()
    region['deployables'][0].update(bad)
    with pytest.raises(exception.InvalidReport):
        _send(region)


def _bind(region_name):
    """An ARQ Bound on the region, as a bind leaves it."""
    region = _region(region_name)
    [handle] = [x for x in h.rows(models.AttachHandle)
                if x.deployable_id == region.id]
    arq_uuid = bh.make_arq(state='Bound')
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest).where(
            models.AcceleratorRequest.uuid == arq_uuid).values(
            deployable_id=region.id, attach_handle_id=handle.id,
            instance_uuid=INSTANCE, hostname=HOST))
        s.execute(sa.update(models.AttachHandle).where(
            models.AttachHandle.id == handle.id).values(in_use=True))
    return arq_uuid


def _claim(region_name, uid='c0ffee00-0000-4000-8000-000000000001'):
    region = _region(region_name)
    [handle] = [x for x in h.rows(models.AttachHandle)
                if x.deployable_id == region.id]
    with session.writer() as s:
        s.add(models.KubernetesClaimDevice(
            uuid='c1' * 18, claim_uid=uid, namespace='team-a',
            claim_name='aes', device_name='fpga-x-region1',
            deployable_id=region.id, attach_handle_id=handle.id))
    return uid


def test_the_holders_of_a_device_that_turned_unhealthy(db, caplog):
    _send(_card())
    arq = _bind('region0')
    claim = _claim('region1')
    with caplog.at_level(logging.INFO):
        _send(_card('unhealthy', 'catfatal_errors 0x4'))
    told = [r.getMessage() for r in caplog.records
            if 'stays bound' in r.getMessage()]
    assert len(told) == 2
    assert 'ARQ %s of instance %s' % (arq, INSTANCE) in told[0]
    assert 'catfatal_errors 0x4' in told[0] and CARD in told[0]
    assert 'ResourceClaim team-a/aes (uid %s' % claim in told[1]
    # Still bound: the workload runs on.
    assert bh.get_arq(arq).state == 'Bound'

    caplog.clear()
    with caplog.at_level(logging.INFO):
        _send(_card('unhealthy', 'catfatal_errors 0x4'))
        _send(_card('recovering', 'catfatal_errors 0x4 (cleared)'))
    assert not [r for r in caplog.records if arq in r.getMessage()]
    with caplog.at_level(logging.INFO):
        _send(_card())
    assert [r for r in caplog.records
            if 'is healthy again' in r.getMessage() and arq in
            r.getMessage()]


def test_a_region_s_own_fault_names_only_its_holder(db, caplog):
    _send(_card())
    _bind('region0')
    claim = _claim('region1')
    with caplog.at_level(logging.WARNING):
        _send(_card(region1=('unhealthy', 'port_errors 0x1')))
    [told] = [r.getMessage() for r in caplog.records
              if 'stays bound' in r.getMessage()]
    assert claim in told and 'port_errors 0x1' in told

"""A whole card and one of its regions bound at once, on PostgreSQL
(common/shared_functions.py): whichever transaction claims first holds
its handle open; the other waits on the card's row lock and then sees
the claim, so exactly one is Bound."""
import json
import uuid

import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import shared_functions
from cyborg_lite.db import arq_binds
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind

pytestmark = pytest.mark.postgresql


def _whole_card():
    """Two regions on their own VFs and the card on its PF (function 0 of
    the regions' bus), with the
    attributes the report stores for them (dfl._deployables)."""
    regions = h.make_card(sriov=True)
    with session.writer() as s:
        region = s.get(models.Deployable, regions[0]['deployable_id'])
        card = models.Deployable(
            uuid=str(uuid.uuid4()), device_id=region.device_id,
            rp_uuid=regions[0]['device_rp_uuid'],
            name=region.name.rsplit('_', 1)[0] + '_card',
            driver_name='fake')
        s.add(card)
        s.flush()
        for key, value in (('rc', 'FPGA'),
                           ('trait0', shared_functions.WHOLE_CARD_TRAIT)):
            s.add(models.Attribute(uuid=str(uuid.uuid4()),
                                   deployable_id=card.id, key=key,
                                   value=value))
        for r in regions:
            s.add(models.Attribute(
                uuid=str(uuid.uuid4()), deployable_id=r['deployable_id'],
                key=shared_functions.WHOLE_CARD_ATTRIBUTE, value='card'))
        bus = json.loads(s.get(models.AttachHandle, s.scalars(
            models.AttachHandle.__table__.select().with_only_columns(
                models.AttachHandle.id).where(
                models.AttachHandle.deployable_id == region.id)).first())
            .attach_info)['bus']
        s.add(models.AttachHandle(
            uuid=str(uuid.uuid4()), deployable_id=card.id, attach_type='PCI',
            attach_info=h.pci_info(int(bus, 16), 0)))
        made = dict(regions[0], deployable_id=card.id,
                    deployable_uuid=card.uuid)
    return made, regions[0]


def _bind(target):
    arq_uuid = h.make_arq()
    [started], refused = arq_binds.begin_binds(
        {arq_uuid: h.binding(target)}, 'cond-test')
    assert not refused
    return started, lambda: arq_binds.finish_bind(
        started, target['deployable_id'], target['deployable_uuid'])


def _held_after_claim(monkeypatch, deployable_id):
    """Hold the bind of ``deployable_id`` after its claim, transaction
    open."""
    held, mark = Held(), arq_binds.cleaning.mark_allocated

    def mark_and_hold(s, dep_id, *args):
        mark(s, dep_id, *args)
        if dep_id == deployable_id:
            held.hold()
    monkeypatch.setattr(arq_binds.cleaning, 'mark_allocated', mark_and_hold)
    return held


@pytest.mark.parametrize('card_first', [True, False])
def test_a_card_and_its_region_bound_at_once(pg_db, monkeypatch,
                                             card_first):
    card, region = _whole_card()
    (card_started, bind_card), (region_started, bind_region) = (
        _bind(card), _bind(region))
    first, second = (bind_card, bind_region) if card_first else (
        bind_region, bind_card)
    held = _held_after_claim(monkeypatch, (card if card_first else region)[
        'deployable_id'])

    results = blocked_behind(held, first, second)

    assert not isinstance(results['first'], Exception), results
    assert isinstance(results['second'], exception.ArqBindFailed), results
    assert 'whole_card_in_use' in str(results['second'])
    winner, loser = (card_started, region_started) if card_first else (
        region_started, card_started)
    assert h.get_arq(winner.uuid).state == 'Bound'
    # The conductor fails it with the reason (conductor/bind.py); its
    # transaction claimed nothing.
    assert h.get_arq(loser.uuid).attach_handle_id is None
    h.check_no_handle_double_use()

"""A vGPU's VF freed after its instance was removed
(db/instance_removals.removed), on PostgreSQL at the point of conflict:
of two conductors freeing one VF exactly one does; and a bind taking
another VF of the type while the last one is freed leaves the type
allocated, never available under its holder."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import device_records
from cyborg_lite.db import arq_binds
from cyborg_lite.db import cleaning
from cyborg_lite.db import instance_removals
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind

pytestmark = pytest.mark.postgresql


def _vgpu_type(released_vfs=1, free_vfs=1):
    """A region standing for a vGPU type (its bind makes the instance)
    with ``released_vfs`` handles whose holder left (awaiting removal)
    and ``free_vfs`` free ones; (region, [released handle ids])."""
    [region] = h.make_card(regions=1, sriov=True, rc='VGPU')
    dep_id = region['deployable_id']
    key, value = device_records.MAKES_INSTANCE
    released = []
    with session.writer() as s:
        s.add(models.Attribute(uuid=h._uuid(), deployable_id=dep_id,
                               key=key, value=value))
        [first] = s.scalars(sa.select(models.AttachHandle).where(
            models.AttachHandle.deployable_id == dep_id)).all()
        handles = [first] + [models.AttachHandle(
            uuid=h._uuid(), deployable_id=dep_id, attach_type='PCI',
            attach_info=h.pci_info(200, 10 + i))
            for i in range(released_vfs + free_vfs - 1)]
        s.add_all(handles[1:])
        s.flush()
        for handle in handles[:released_vfs]:
            handle.in_use, handle.awaits_removal = True, True
            handle.in_use_function = 'vf-%d' % handle.id
            released.append(handle.id)
        s.get(models.Deployable, dep_id).device_state = 'allocated'
    return region, released


def _state(region):
    with session.reader() as s:
        return s.get(models.Deployable, region['deployable_id']).device_state


def _in_use(region):
    with session.reader() as s:
        return sorted(s.scalars(sa.select(models.AttachHandle.id).where(
            models.AttachHandle.deployable_id == region['deployable_id'],
            models.AttachHandle.in_use.is_(True))).all())


def _held_at_idle(monkeypatch):
    """Hold removed() after its handle's UPDATE, at the type's move."""
    held, idle = Held(), cleaning.idle

    def idle_and_hold(s, deployable_id):
        moved = idle(s, deployable_id)
        held.hold()
        return moved
    monkeypatch.setattr(instance_removals.cleaning, 'idle', idle_and_hold)
    return held


def test_two_conductors_free_one_vf_exactly_once(pg_db, monkeypatch):
    region, [handle] = _vgpu_type(released_vfs=1, free_vfs=0)
    held = _held_at_idle(monkeypatch)
    results = blocked_behind(
        held, lambda: instance_removals.removed(handle),
        lambda: instance_removals.removed(handle))
    assert results == {'first': 'host1', 'second': None}
    assert _in_use(region) == []
    assert _state(region) == 'available'


def test_a_bind_of_another_vf_while_the_last_is_freed_keeps_it_allocated(
        pg_db, monkeypatch):
    region, [handle] = _vgpu_type(released_vfs=1, free_vfs=1)
    arq_uuid = h.make_arq()
    [started], refused = arq_binds.begin_binds(
        {arq_uuid: h.binding(region)}, 'cond-test')
    assert not refused
    # The bind holds the region's lock and its claim of the free VF, its
    # transaction open, while the freeing of the released VF comes.
    held, mark = Held(), arq_binds.cleaning.mark_allocated

    def mark_and_hold(s, deployable_id, *args):
        mark(s, deployable_id, *args)
        held.hold()
    monkeypatch.setattr(arq_binds.cleaning, 'mark_allocated', mark_and_hold)
    results = blocked_behind(
        held, lambda: arq_binds.finish_bind(
            started, region['deployable_id'], region['deployable_uuid']),
        lambda: instance_removals.removed(handle))
    assert results['second'] == 'host1', results
    claimed = results['first']
    assert not isinstance(claimed, Exception), claimed
    assert _in_use(region) == [claimed.handle_id]
    assert _state(region) == 'allocated'

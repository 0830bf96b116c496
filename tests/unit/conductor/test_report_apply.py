"""Applying agent reports as a diff, on SQLite and PostgreSQL."""
import json
import logging
import uuid

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.conductor import report
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.placement import naming
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARD0 = '0000:5e:00.0'
CARD1 = '0000:af:00.0'


def test_first_report_creates_the_whole_tree(db):
    ack = report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0))])

    assert ack['changed'] and ack['drivers'] == {'fpga': 'applied'}
    [dev] = h.devices()
    assert (dev.hostname, dev.driver_name, dev.identity, dev.type) == \
        (HOST, 'fpga', CARD0, 'FPGA')
    assert dev.rp_uuid == naming.rp_uuid(naming.device_rp_name(HOST, CARD0))
    [cpid] = h.rows(models.ControlpathId, device_id=dev.id)
    assert json.loads(cpid.cpid_info) == {
        'domain': '0000', 'bus': '5e', 'device': '00', 'function': '0'}
    deps = h.rows(models.Deployable, device_id=dev.id)
    assert [d.name for d in deps] == [
        device_records.deployable_db_name(HOST, CARD0, 'region%d' % i)
        for i in (0, 1)]
    assert deps[0].rp_uuid == naming.rp_uuid(naming.deployable_rp_name(
        HOST, CARD0, 'region0', 'FPGA'))
    attrs = {a.key: a.value for a in
             h.rows(models.Attribute, deployable_id=deps[0].id)}
    assert attrs == {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL',
                     'trait1': 'CUSTOM_FPGA_REGION_A1B2', 'slot': '0'}
    [handle] = h.rows(models.AttachHandle, deployable_id=deps[1].id)
    assert json.loads(handle.attach_info)['function'] == '2'
    assert handle.cpid_id == cpid.id and handle.in_use is False


def test_unchanged_report_makes_zero_writes(db):
    card = h.fpga(CARD0)
    report.handle_report(HOST, [h.ok('fpga', card, h.fpga(CARD1))])
    before = h.snapshot()
    # The same hardware listed in another order is no change either.
    shuffled = h.changed(card, deployables=card['deployables'][::-1])
    shuffled['deployables'][0]['traits'].reverse()

    with h.count_writes() as writes:
        ack = report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD1),
                                               shuffled)])

    assert writes == []
    assert ack['changed'] is False
    assert h.snapshot() == before


def test_changed_fields_update_in_place(db):
    card = h.fpga(CARD0)
    report.handle_report(HOST, [h.ok('fpga', card)])
    [old] = h.devices()
    card = h.changed(card, model='PAC D5005')
    card['deployables'][0].update(function_id='f00d', local_memory_mb=8192)
    card['deployables'][0]['traits'].append('CUSTOM_FUNCTION_ID_F00D')

    with h.count_writes() as writes:
        ack = report.handle_report(HOST, [h.ok('fpga', card)])

    [dev] = h.devices()
    assert (dev.uuid, dev.model, dev.version) == (old.uuid, 'PAC D5005',
                                                  old.version + 1)
    region0 = h.rows(models.Deployable, device_id=dev.id)[0]
    assert (region0.function_id, region0.local_memory_mb) == ('f00d', 8192)
    assert ack['created'] == 1 and ack['updated'] == 2
    assert not [w for w in writes if w.lstrip().startswith('DELETE')]


def test_failed_scan_keeps_that_drivers_devices(db):
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0)),
                                h.ok('gpu', h.fpga(CARD1))])
    fpga_rows = h.rows(models.Device, driver_name='fpga')

    ack = report.handle_report(HOST, [h.failed('fpga'), h.ok('gpu')])

    assert ack['drivers'] == {'fpga': 'scan failed', 'gpu': 'applied'}
    assert [d.uuid for d in h.rows(models.Device, driver_name='fpga')] == \
        [d.uuid for d in fpga_rows]
    assert h.rows(models.Device, driver_name='gpu') == []


def test_device_missing_from_a_good_scan_is_deleted(db):
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1))])

    ack = report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD1))])

    assert [d.identity for d in h.devices()] == [CARD1]
    assert ack['deleted'] == 1 + 1 + 2 * (1 + 4 + 1)
    dev_ids = {d.id for d in h.devices()}
    assert {c.device_id for c in h.rows(models.ControlpathId)} == dev_ids
    assert {d.device_id for d in h.rows(models.Deployable)} == dev_ids


def test_missing_deployable_and_handle_are_deleted(db):
    card = h.fpga(CARD0)
    report.handle_report(HOST, [h.ok('fpga', card)])
    card = h.changed(card, deployables=card['deployables'][:1])
    card['deployables'][0]['attach_handles'][0]['attach_info']['function'] \
        = '7'

    report.handle_report(HOST, [h.ok('fpga', card)])

    [dep] = h.rows(models.Deployable)
    assert dep.name.endswith('_region0')
    [handle] = h.rows(models.AttachHandle)
    assert json.loads(handle.attach_info)['function'] == '7'
    assert {a.deployable_id for a in h.rows(models.Attribute)} == {dep.id}


def _bind_arq(handle):
    with session.writer() as s:
        profile = models.DeviceProfile(uuid=str(uuid.uuid4()), name='p',
                                       profile_json='[]')
        s.add(profile)
        s.flush()
        s.add(models.AcceleratorRequest(
            uuid=str(uuid.uuid4()), device_profile_id=profile.id,
            device_profile_group_id=0, state='Bound',
            attach_handle_id=handle.id))


def test_handle_in_use_keeps_its_missing_device(db, caplog):
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0))])
    [busy, free] = h.rows(models.AttachHandle)
    _bind_arq(busy)
    [before] = h.devices()

    with caplog.at_level(logging.INFO):
        ack = report.handle_report(HOST, [h.ok('fpga')])

    # Held (handed whole to a guest), not faulty: kept as it was.
    [dev] = h.devices()
    assert (dev.health, dev.health_reason, dev.health_since) == (
        'healthy', None, before.health_since) and ack['kept_in_use'] == 1
    assert h.rows(models.DeviceHistory) == []
    assert [a.id for a in h.rows(models.AttachHandle)] == [busy.id]
    assert len(h.rows(models.Deployable)) == 1
    assert 'kept while held' in caplog.text
    # Kept as it is: the next identical scan writes nothing.
    with h.count_writes() as writes:
        report.handle_report(HOST, [h.ok('fpga')])
    assert writes == []


def test_a_region_in_a_guest_leaves_its_card_and_siblings_as_they_are(db):
    """A VF handed to a guest: its region leaves the scan, the card
    stays, healthy, and its other region is untouched: nothing is
    written (a held region is not noted unreported: nothing waits on
    it while its holder has it)."""
    card = h.fpga(CARD0)
    report.handle_report(HOST, [h.ok('fpga', card)])
    [busy, _free] = h.rows(models.AttachHandle)
    _bind_arq(busy)
    [before] = h.devices()
    siblings = h.snapshot()

    with h.count_writes() as writes:
        ack = report.handle_report(HOST, [h.ok('fpga', h.changed(
            card, deployables=card['deployables'][1:]))])

    assert ack['kept_in_use'] == 1 and ack['changed'] is False
    [dev] = h.devices()
    assert (dev.health, dev.health_since) == ('healthy',
                                              before.health_since)
    assert writes == [] and h.snapshot() == siblings
    assert h.rows(models.DeviceHistory) == []


def test_a_region_not_wiped_yet_is_kept_while_it_is_gone(db):
    """Its ARQ released while its VF is still with vfio-pci: deleted, it
    would come back as a new, available row with the tenant's data."""
    card = h.fpga(CARD0)
    report.handle_report(HOST, [h.ok('fpga', card)])
    [dep0, _dep1] = h.rows(models.Deployable)
    with session.writer() as s:
        s.get(models.Deployable, dep0.id).device_state = 'pending_cleaning'

    ack = report.handle_report(HOST, [h.ok('fpga', h.changed(
        card, deployables=card['deployables'][1:]))])

    assert ack['kept_in_use'] == 1
    kept = [d for d in h.rows(models.Deployable) if d.id == dep0.id]
    assert [d.device_state for d in kept] == ['pending_cleaning']
    assert len(h.rows(models.AttachHandle, deployable_id=dep0.id)) == 1
    # Noted unreported, and why its clean waits.
    assert _unreported() == [dep0.id]
    assert kept[0].cleaning_error == cleaning_db.WAIT_REASON
    assert [(r.event, r.reason) for r in h.rows(models.DeviceHistory)] == [
        ('deployable.clean.wait', cleaning_db.WAIT_REASON)]
    # The same scan again: nothing written.
    with h.count_writes() as writes:
        ack = report.handle_report(HOST, [h.ok('fpga', h.changed(
            card, deployables=card['deployables'][1:]))])
    assert writes == [] and ack['returned'] == 0
    # Back in the scan: the same row, still to be wiped, the note gone.
    ack = report.handle_report(HOST, [h.ok('fpga', card)])
    assert ack['returned'] == 1 and ack['changed'] is True
    assert h.rows(models.Deployable, id=dep0.id)[0].device_state == \
        'pending_cleaning'
    assert _unreported() == []


def _unreported():
    return [a.deployable_id for a in h.rows(models.Attribute,
                                            key=cleaning_db.UNREPORTED)]


def _card_without_sriov():
    """Both regions behind the card's PF: one accelerator
    (common/shared_functions.py)."""
    card = h.fpga(CARD0)
    for dep in card['deployables']:
        dep['attach_handles'][0]['attach_info']['function'] = '0'
    return card


def _hold(handle, holder):
    if holder == 'arq':
        _bind_arq(handle)
    else:   # a Kubernetes claim's, or an older release's in-use flag
        with session.writer() as s:
            s.get(models.AttachHandle, handle.id).in_use = True


@pytest.mark.parametrize('holder', ['arq', 'flag'])
def test_a_pf_in_a_guest_keeps_every_region_behind_it(db, holder):
    """vfio-pci takes a card's PF: the whole card leaves the host
    driver's view. Region1 sits behind the PF region0's holder has: it is
    held too, kept as it was, nothing written; the PF given back, the
    card is the same rows again."""
    card = _card_without_sriov()
    report.handle_report(HOST, [h.ok('fpga', card)])
    [held, sibling] = h.rows(models.AttachHandle)
    assert held.attach_info == sibling.attach_info
    _hold(held, holder)
    before = h.snapshot()
    requests = len(h.rows(models.PublishRequest))

    for scan in ([], [card]):   # in the guest, then given back
        with h.count_writes() as writes:
            ack = report.handle_report(HOST, [h.ok('fpga', *scan)])
        assert writes == [] and ack['changed'] is False
        assert h.snapshot() == before
    assert h.rows(models.DeviceHistory) == []
    assert len(h.rows(models.PublishRequest)) == requests


def test_a_region_listed_without_a_function_its_sibling_holds_keeps_it(db):
    card = _card_without_sriov()
    report.handle_report(HOST, [h.ok('fpga', card)])
    [held, sibling] = h.rows(models.AttachHandle)
    _bind_arq(held)
    before = h.snapshot()
    card['deployables'][1]['attach_handles'] = []

    ack = report.handle_report(HOST, [h.ok('fpga', card)])

    assert ack['kept_in_use'] == 1
    assert h.snapshot()['attach_handles'] == before['attach_handles']


def test_the_regions_behind_a_function_not_wiped_yet_are_kept(db):
    """Region0 released while the PF is still with vfio-pci: its sibling
    behind the same PF is kept too, as it was (deleted, it would come
    back as a new region, offered), until region0 is wiped. Region0,
    whose clean must wait for the PF, is noted unreported and says why
    (test_a_region_not_wiped_yet_is_kept_while_it_is_gone)."""
    card = _card_without_sriov()
    report.handle_report(HOST, [h.ok('fpga', card)])
    [dep0, _dep1] = h.rows(models.Deployable)
    with session.writer() as s:
        s.get(models.Deployable, dep0.id).device_state = 'pending_cleaning'
    before = h.snapshot()

    ack = report.handle_report(HOST, [h.ok('fpga')])

    assert ack['kept_in_use'] == 2 and _unreported() == [dep0.id]
    after = h.snapshot()
    [note] = h.rows(models.Attribute, key=cleaning_db.UNREPORTED)
    at = models.Attribute.__table__.c.keys().index('id')
    after['attributes'] = [a for a in after['attributes'] if a[at] != note.id]
    [waits, kept] = after.pop('deployables')
    assert kept == before.pop('deployables')[1]
    error_at = models.Deployable.__table__.c.keys().index('cleaning_error')
    assert waits[error_at] == cleaning_db.WAIT_REASON
    assert after == before
    with session.writer() as s:
        s.get(models.Deployable, dep0.id).device_state = 'available'
    report.handle_report(HOST, [h.ok('fpga')])
    assert h.devices() == [] and h.rows(models.Deployable) == []


def test_kept_device_is_deleted_once_released(db):
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0, regions=1))])
    [handle] = h.rows(models.AttachHandle)
    with session.writer() as s:
        s.get(models.AttachHandle, handle.id).in_use = True
    report.handle_report(HOST, [h.ok('fpga')])
    assert len(h.devices()) == 1
    with session.writer() as s:
        s.get(models.AttachHandle, handle.id).in_use = False

    report.handle_report(HOST, [h.ok('fpga')])

    assert h.devices() == [] and h.rows(models.AttachHandle) == []


def test_other_hosts_and_drivers_are_never_touched(db):
    report.handle_report('node2', [h.ok('fpga', h.fpga(CARD0))])
    report.handle_report(HOST, [h.ok('pci', h.fpga(CARD1))])
    before = h.snapshot()

    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0))])
    report.handle_report(HOST, [h.ok('fpga')])

    assert h.snapshot() == before


def test_health_follows_the_report(db):
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0))])

    report.handle_report(HOST, [h.ok('fpga', h.changed(
        h.fpga(CARD0), health='degraded'))])

    assert h.devices()[0].health == 'degraded'

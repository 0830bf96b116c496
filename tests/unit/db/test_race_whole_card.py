"""A whole card and one of its regions bound at once, on PostgreSQL
(common/shared_functions.py): whichever transaction claims first holds
its handle open; the other waits on the card's row lock and then sees
the claim, so exactly one is Bound."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.db import arq_binds
from cyborg_lite.db import programming_jobs as jobs_db
from tests.unit.conductor import bind_helpers as h
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind
from tests.unit.db.held import held_before_a_jobs_insert

pytestmark = pytest.mark.postgresql


def _whole_card(conf, tmp_path):
    """Two regions on their own VFs and the card on its PF, as the fake
    driver reports them and the conductor stores them: (card, region0)
    as bind_helpers.make_region describes a region."""
    rows = h.report_fake_card(conf, tmp_path, regions_per_card=2,
                              sriov=True, whole_card=True)
    return [{'rp_uuid': rows[name].rp_uuid,
             'deployable_uuid': rows[name].uuid,
             'deployable_id': rows[name].id,
             'device_rp_uuid': rows[name].rp_uuid}
            for name in ('card', 'region0')]


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
def test_a_card_and_its_region_bound_at_once(pg_db, conf, tmp_path,
                                             monkeypatch, card_first):
    card, region = _whole_card(conf, tmp_path)
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


def _job_on_region(target):
    from tests.unit.bitstreams.conftest import add_bitstream
    bitstream = add_bitstream()
    return lambda: jobs_db.create_job(target['deployable_id'], bitstream.id)


def test_the_card_bound_first_then_a_job_on_its_region(pg_db, conf,
                                                       tmp_path, monkeypatch):
    # The card's bind has claimed its PF (transaction open) when a job
    # for region0 is created: the job waits for the card's row, then
    # sees it held.
    card, region = _whole_card(conf, tmp_path)
    started, bind_card = _bind(card)
    held = _held_after_claim(monkeypatch, card['deployable_id'])

    results = blocked_behind(held, bind_card, _job_on_region(region))

    assert not isinstance(results['first'], Exception), results
    assert isinstance(results['second'], exception.Conflict), results
    assert 'in use by accelerator request %s' % started.uuid in str(
        results['second'])
    assert jobs_db.list_jobs() == []


def test_a_job_on_a_region_first_then_its_card_bound(pg_db, conf, tmp_path,
                                                     monkeypatch):
    # The job for region0 holds its locks (the card's too) and is about
    # to insert; the card's bind waits for its row, then sees the job:
    # the card is not handed over while a region of it is written.
    card, region = _whole_card(conf, tmp_path)
    _started, bind_card = _bind(card)
    held = held_before_a_jobs_insert(monkeypatch)

    results = blocked_behind(held, _job_on_region(region), bind_card)

    assert results['first'].state == 'queued', results
    assert isinstance(results['second'], exception.ArqBindFailed), results
    assert results['first'].uuid in str(results['second'])
    assert h.check_no_handle_double_use() == set()

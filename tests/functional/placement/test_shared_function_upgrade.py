"""An upgrade to one provider for the regions behind one PCI function.

Before, each region of a card reached through its PF had a provider of
its own, and Nova may hold an allocation on one of them. After, the
card's provider offers them as one accelerator: the allocation is moved
there with POST /reshaper, and the old providers go. Where Placement
refuses the reshape (no service role), the old provider is held and the
card's provider offers nothing until the allocation is freed, so no
candidate is shown that cannot be bound.
"""
import json
import uuid

import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.placement import tree
from tests.functional.placement import db_rows
from tests.functional.placement.test_sync import _allocate
from tests.functional.placement.test_sync import _tree

PF = json.dumps({'domain': '0000', 'bus': '5e', 'device': '00',
                 'function': '0'}, sort_keys=True, separators=(',', ':'))


def _share_the_pf(hostname):
    """What the report of the new release stores: each region's handle is
    the card's PF."""
    with session.writer() as s:
        for dep in s.scalars(sa.select(models.Deployable)):
            if dep.name.startswith(hostname):
                s.add(models.AttachHandle(
                    uuid=str(uuid.uuid4()), deployable_id=dep.id,
                    attach_type='PCI', attach_info=PF))


def _old_tree_with_an_allocation(server, make_sync, inspector, hostname):
    db_rows.add_fpga(hostname)
    sync = make_sync(server)
    assert sync.publish(hostname).converged
    card = '%s_0000:5e:00.0' % hostname
    peek = inspector(server)
    consumer = str(uuid.uuid4())
    _allocate(peek, tree.rp_uuid(card + '_region1'), consumer)
    _share_the_pf(hostname)
    return sync, peek, card, consumer


def _candidates(peek, hostname):
    found = peek.get('/allocation_candidates?resources=FPGA:1')
    root = peek.get('/resource_providers?name=%s' % hostname)[
        'resource_providers'][0]['uuid']
    return [rp for rp, summary in found['provider_summaries'].items()
            if summary['parent_provider_uuid'] is not None and
            summary.get('root_provider_uuid', root) == root]


def test_an_allocation_moves_to_the_cards_provider(
        reshaping_placement, make_sync, inspector, hostname):
    sync, peek, card, consumer = _old_tree_with_an_allocation(
        reshaping_placement, make_sync, inspector, hostname)

    result = sync.publish(hostname)

    assert result.converged, result.error
    assert set(result.report.deleted) == {card + '_region0',
                                          card + '_region1'}
    got = _tree(peek, hostname)
    assert set(got) == {card}
    assert got[card][1] == {'FPGA': (1, 0),
                            'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 0)}
    moved = peek.get('/allocations/%s' % consumer)['allocations']
    assert moved == {tree.rp_uuid(card): {
        'resources': {'FPGA': 1}, 'generation': moved[tree.rp_uuid(card)][
            'generation']}}
    # Its one accelerator is the moved allocation's: none is offered.
    assert _candidates(peek, hostname) == []


def test_a_refused_move_holds_both_until_the_allocation_is_freed(
        placement, make_sync, inspector, hostname):
    sync, peek, card, consumer = _old_tree_with_an_allocation(
        placement, make_sync, inspector, hostname)

    result = sync.publish(hostname)

    assert not result.converged
    assert result.report.held == [card + '_region1']
    got = _tree(peek, hostname)
    assert got[card][1]['FPGA'] == (1, 1)
    assert got[card + '_region1'][1]['FPGA'] == (1, 1)
    assert _candidates(peek, hostname) == []

    peek.delete('/allocations/%s' % consumer)
    sync.clock.now += 3600
    (retried,) = sync.retry_pending()

    assert retried.converged
    got = _tree(peek, hostname)
    assert set(got) == {card} and got[card][1]['FPGA'] == (1, 0)
    assert _candidates(peek, hostname) == [tree.rp_uuid(card)]

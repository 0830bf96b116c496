"""A whole card beside its regions: one provider, one slot per region
(common/shared_functions.py), built from plain views (no Placement)."""
import dataclasses

from cyborg_lite.common import resources
from cyborg_lite.common import shared_functions
from cyborg_lite.inventory import views
from cyborg_lite.placement import tree

ROOT = '11111111-1111-1111-1111-111111111111'
PF = {'domain': '0000', 'bus': '5e', 'device': '00', 'function': '0'}
CARD = {'resources:FPGA': '2',
        'trait:%s' % shared_functions.WHOLE_CARD_TRAIT: 'required'}
REGION = {'resources:FPGA': '1'}


def _handle(function, in_use=False, k8s_claim=None):
    return views.AttachHandleView(uuid='h' + function, attach_type='PCI',
                                  attach_info=dict(PF, function=function),
                                  in_use=in_use, k8s_claim=k8s_claim)


def _card(card_state='available', states=('available', 'available'),
          card_handle=None, region_handles=None):
    region_handles = region_handles or [_handle('1'), _handle('2')]
    regions = tuple(
        views.DeployableView(uuid='dep-%d' % i, name='region%d' % i,
                             region_type='9346116d-a52d',
                             local_memory_mb=2048, device_state=state,
                             attach_handles=(region_handles[i],))
        for i, state in enumerate(states))
    card = views.DeployableView(
        uuid='dep-card', name='card', device_state=card_state,
        traits=('CUSTOM_FPGA_INTEL', shared_functions.WHOLE_CARD_TRAIT),
        attach_handles=(card_handle or _handle('0'),))
    return views.DeviceView(uuid='dev-1', type='FPGA', vendor='0x8086',
                            identity='0000:5e:00.0',
                            pci_address='0000:5e:00.0',
                            deployables=regions + (card,))


def _offer(dev):
    [dev_rp] = tree.build_tree('n', ROOT, [dev]).providers
    return dev_rp, {rc: (inv['total'], inv['reserved'], inv['max_unit'])
                    for rc, inv in dev_rp.inventories.items()}


def test_the_card_and_its_regions_are_slots_of_the_cards_provider():
    t = tree.build_tree('n', ROOT, [_card()])
    [dev_rp] = t.providers
    assert _offer(_card())[1] == {
        'FPGA': (2, 0, 2), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 0, 2048)}
    assert {shared_functions.WHOLE_CARD_TRAIT,
            'CUSTOM_FPGA_REGION_9346116D_A52D'} <= dev_rp.traits
    assert set(t.deployable_rps.values()) == {dev_rp.uuid}
    # What the regions' own providers held moves to the card's.
    assert t.moved == {tree.rp_uuid('n_0000:5e:00.0_%s' % n): dev_rp.uuid
                       for n in ('region0', 'region1', 'card')}


def test_a_region_not_wiped_reserves_its_slot_and_so_keeps_the_card():
    _rp, offer = _offer(_card(states=('pending_cleaning', 'available')))
    assert offer['FPGA'] == (2, 1, 2)
    assert offer['CUSTOM_FPGA_LOCAL_MEMORY_MB'] == (4096, 2048, 2048)


def test_a_card_not_wiped_or_claimed_by_kubernetes_reserves_every_slot():
    for dev in (_card(card_state='pending_cleaning'),
                _card(card_handle=_handle('0', in_use=True,
                                          k8s_claim='uid-1'))):
        assert _offer(dev)[1]['FPGA'] == (2, 2, 2)


def test_a_bound_region_or_card_is_the_allocations_not_reserved():
    for dev in (_card(states=('allocated', 'available'),
                      region_handles=[_handle('1', in_use=True),
                                      _handle('2')]),
                _card(card_state='allocated',
                      card_handle=_handle('0', in_use=True))):
        assert _offer(dev)[1]['FPGA'] == (2, 0, 2)


def _choose(dev, group):
    return views.choose_member(
        dev, dev.deployables, lambda dep: tree.mismatch(dev, dep, group))


def test_a_bind_takes_the_card_only_for_a_group_asking_for_it():
    dev = _card()
    assert _choose(dev, CARD)[0].name == 'card'
    assert _choose(dev, REGION)[0].name == 'region0'
    chosen, why = _choose(dev, dict(CARD, **{'resources:FPGA': '3'}))
    assert chosen is None and 'card: it has less than 3 FPGA' in why
    assert 'region0: the group asks for the whole card' in why


def test_a_whole_card_group_is_one_accelerator():
    assert resources.accelerator_count(CARD) == 1
    assert resources.accelerator_count(
        {'resources:FPGA': '2',
         'trait: %s' % shared_functions.WHOLE_CARD_TRAIT: 'forbidden'}) == 2
    assert resources.accelerator_count({'resources:FPGA': '2'}) == 2


def test_without_a_whole_card_regions_keep_their_providers():
    dev = _card()
    alone = dataclasses.replace(dev, deployables=dev.deployables[:2])
    assert len(tree.build_tree('n', ROOT, [alone]).providers) == 3

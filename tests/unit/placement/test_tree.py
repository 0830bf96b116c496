"""The desired provider tree, built from plain views (no Placement)."""
import dataclasses
import uuid

from cyborg_lite.inventory import views
from cyborg_lite.placement import tree

ROOT = '11111111-1111-1111-1111-111111111111'


def _fpga(health='healthy', function_id='a1b2-c3', **kw):
    regions = tuple(
        views.DeployableView(uuid='dep-%d' % i, name='region%d' % i,
                            region_type='9346116d-a52d', local_memory_mb=2048,
                            function_id=function_id if i == 0 else None)
        for i in range(2))
    return views.DeviceView(uuid='dev-1', type='FPGA', vendor='intel',
                           identity='0000:5e:00.0',
                           pci_address='0000:5e:00.0', health=health,
                           deployables=regions, **kw)


def test_names_and_uuids_follow_cyborg():
    t = tree.build_tree('node1', ROOT, [_fpga()])
    names = [p.name for p in t.providers]
    assert names == ['node1_0000:5e:00.0', 'node1_0000:5e:00.0_region0',
                     'node1_0000:5e:00.0_region1']
    for p in t.providers:
        assert p.uuid == str(uuid.uuid3(uuid.NAMESPACE_DNS, p.name))
    assert t.providers[0].parent_uuid == ROOT
    assert t.providers[1].parent_uuid == t.providers[0].uuid
    assert t.device_rps == {'dev-1': t.providers[0].uuid}
    assert t.deployable_rps == {'dep-0': t.providers[1].uuid,
                                'dep-1': t.providers[2].uuid}


def test_global_deployable_name_is_not_prefixed_twice():
    dep = views.DeployableView(uuid='d', name='node1_0000:5e:00.0_region7')
    assert tree.child_rp_name('node1_0000:5e:00.0', dep) == dep.name


def test_fpga_region_inventory_and_traits():
    dev_rp, region0, region1 = tree.build_tree('n', ROOT, [_fpga()]).providers
    assert dev_rp.inventories == {}
    assert dev_rp.traits == {'OWNER_CYBORG', 'CUSTOM_FPGA_INTEL',
                             'CUSTOM_PROGRAMMABLE'}
    assert region0.inventories['FPGA']['total'] == 1
    assert region0.inventories['CUSTOM_FPGA_LOCAL_MEMORY_MB'] == {
        'total': 2048, 'reserved': 0, 'min_unit': 1, 'max_unit': 2048,
        'step_size': 1, 'allocation_ratio': 1.0}
    assert region0.traits == {
        'OWNER_CYBORG', 'CUSTOM_FPGA_INTEL', 'CUSTOM_PROGRAMMABLE',
        'CUSTOM_FPGA_REGION_9346116D_A52D', 'CUSTOM_FUNCTION_ID_A1B2_C3'}
    assert not any(t.startswith('CUSTOM_FUNCTION_ID') for t in region1.traits)


def test_unhealthy_or_disabled_device_reserves_everything():
    for dev in (_fpga(health='unhealthy'), _fpga(status='maintaining')):
        providers = tree.build_tree('n', ROOT, [dev]).providers
        invs = [inv for p in providers for inv in p.inventories.values()]
        assert invs and all(i['reserved'] == i['total'] for i in invs)


def test_degraded_device_stays_schedulable():
    providers = tree.build_tree(
        'n', ROOT, [_fpga(health='degraded')]).providers
    assert providers[1].inventories['FPGA']['reserved'] == 0


def test_gpu_pgpu_on_device_rp_and_vgpu_children():
    deps = (views.DeployableView(uuid='p', name='pgpu', resource_class='PGPU',
                                traits=('CUSTOM_NVIDIA_A100',)),
            views.DeployableView(uuid='m', name='mig-1g.10gb',
                                resource_class='VGPU', num_accelerators=7,
                                traits=('nvidia a100 mig-1g.10gb',)))
    gpu = views.DeviceView(uuid='g', type='GPU', vendor='NVIDIA',
                          identity='0000:3b:00.0', pci_address='0000:3b:00.0',
                          deployables=deps)
    dev_rp, mig = tree.build_tree('n', ROOT, [gpu]).providers
    assert dev_rp.inventories['PGPU']['total'] == 1
    assert 'CUSTOM_NVIDIA_A100' in dev_rp.traits
    assert mig.name == 'n_0000:3b:00.0_mig-1g.10gb'
    assert mig.inventories['VGPU']['total'] == 7
    assert 'CUSTOM_NVIDIA_A100_MIG_1G_10GB' in mig.traits
    t = tree.build_tree('n', ROOT, [gpu])
    assert t.deployable_rps['p'] == dev_rp.uuid


def test_undivided_gpu_is_one_pgpu():
    gpu = views.DeviceView(uuid='g', type='GPU', vendor='nvidia',
                          identity='0000:3b:00.0',
                          pci_address='0000:3b:00.0')
    (dev_rp,) = tree.build_tree('n', ROOT, [gpu]).providers
    assert dev_rp.inventories['PGPU']['total'] == 1


def test_device_without_pci_address_uses_identity():
    dev = views.DeviceView(uuid='q', type='QAT', vendor='intel',
                          identity='qat-0',
                          deployables=(views.DeployableView(uuid='d',
                                                           name='vf0'),))
    dev_rp, child = tree.build_tree('n', ROOT, [dev]).providers
    assert dev_rp.name == 'n_qat-0'
    assert set(child.inventories) == {'CUSTOM_QAT'}


def test_trait_names_are_normalised():
    assert tree.trait_name('fpga-intel.arria10') == 'CUSTOM_FPGA_INTEL_ARRIA10'
    assert tree.trait_name('CUSTOM_ALREADY_OK') == 'CUSTOM_ALREADY_OK'
    assert tree.trait_name('custom_lower') == 'CUSTOM_LOWER'
    # Standard traits are kept, not turned into CUSTOM_ ones.
    assert tree.trait_name('OWNER_CYBORG') == 'OWNER_CYBORG'
    assert tree.trait_name('HW_CPU_X86_AVX2') == 'HW_CPU_X86_AVX2'
    assert len(tree.trait_name('x' * 400)) == 255


def test_resource_class_names_are_normalised():
    assert tree.resource_class_name('fpga') == 'FPGA'
    assert tree.resource_class_name('VGPU') == 'VGPU'
    assert tree.resource_class_name('qat') == 'CUSTOM_QAT'
    assert tree.resource_class_name('custom_nic') == 'CUSTOM_NIC'
    assert tree.resource_class_name('local memory-MB') == \
        'CUSTOM_LOCAL_MEMORY_MB'


def test_tree_is_deterministic_whatever_the_device_order():
    a = _fpga()
    b = views.DeviceView(uuid='dev-0', type='GPU', vendor='nvidia',
                        identity='0000:3b:00.0', pci_address='0000:3b:00.0')
    one = tree.build_tree('n', ROOT, [a, b]).providers
    two = tree.build_tree('n', ROOT, [b, a]).providers
    assert one == two


def test_vendor_trait_uses_the_vendor_name_for_known_pci_ids():
    intel = _fpga()
    for vendor, trait in (('0x8086', 'CUSTOM_FPGA_INTEL'),
                          ('0x10EE', 'CUSTOM_FPGA_XILINX'),
                          ('0x1234', 'CUSTOM_FPGA_0X1234')):
        device = views.DeviceView(**{**intel.__dict__, 'vendor': vendor})
        assert tree.vendor_trait(device) == trait


def test_a_host_whose_agent_is_down_reserves_everything():
    providers = tree.build_tree('n', ROOT, [_fpga(agent_down=True)]).providers
    invs = [inv for p in providers for inv in p.inventories.values()]
    assert invs and all(i['reserved'] == i['total'] for i in invs)
    gpu = views.DeviceView(uuid='g', type='GPU', vendor='nvidia',
                           identity='0000:3b:00.0', agent_down=True)
    [gpu_rp] = tree.build_tree('n', ROOT, [gpu]).providers
    assert gpu_rp.inventories['PGPU']['reserved'] == 1


PF = {'domain': '0000', 'bus': '5e', 'device': '00', 'function': '0'}


def _handle(function='0', in_use=False, held_by=None):
    return views.AttachHandleView(uuid='h' + function, attach_type='PCI',
                                  attach_info=dict(PF, function=function),
                                  in_use=in_use, held_by=held_by)


def _behind(dev, *handles_and_states):
    """``dev`` with its regions' handles and device_states replaced."""
    regions = tuple(
        dataclasses.replace(dep, attach_handles=handles, device_state=state)
        for dep, (handles, state) in zip(dev.deployables,
                                         handles_and_states))
    return dataclasses.replace(dev, deployables=regions)


def test_regions_behind_one_pf_are_one_accelerator_on_the_device_rp():
    dev = _behind(_fpga(), ((_handle(),), 'available'),
                  ((_handle(),), 'available'))
    t = tree.build_tree('n', ROOT, [dev])
    [dev_rp] = t.providers
    assert dev_rp.inventories['FPGA']['total'] == 1
    assert dev_rp.inventories['CUSTOM_FPGA_LOCAL_MEMORY_MB']['total'] == 2048
    assert {'CUSTOM_FPGA_REGION_9346116D_A52D', 'CUSTOM_FUNCTION_ID_A1B2_C3',
            'CUSTOM_PROGRAMMABLE', 'OWNER_CYBORG'} <= dev_rp.traits
    assert t.deployable_rps == {'dep-0': dev_rp.uuid, 'dep-1': dev_rp.uuid}
    # The providers they had alone move there (an upgrade's reshape).
    alone = {tree.rp_uuid('n_0000:5e:00.0_region%d' % i) for i in (0, 1)}
    assert t.moved == {u: dev_rp.uuid for u in alone}


def test_a_pf_is_offered_while_one_region_behind_it_may_be_bound():
    held = _behind(_fpga(), ((_handle(in_use=True),), 'allocated'),
                   ((_handle(held_by=('arq-1', 'region0')),), 'available'))
    [dev_rp] = tree.build_tree('n', ROOT, [held]).providers
    # The holder's allocation uses the one accelerator; nothing to hide.
    assert dev_rp.inventories['FPGA']['reserved'] == 0


def test_a_pf_with_a_region_not_wiped_yet_is_reserved():
    dirty = _behind(_fpga(), ((_handle(),), 'pending_cleaning'),
                    ((_handle(),), 'available'))
    [dev_rp] = tree.build_tree('n', ROOT, [dirty]).providers
    assert dev_rp.inventories['FPGA']['reserved'] == 1
    assert dev_rp.inventories['CUSTOM_FPGA_LOCAL_MEMORY_MB']['reserved'] \
        == 2048


def test_regions_with_their_own_functions_keep_their_providers():
    dev = _behind(_fpga(), ((_handle('1'),), 'available'),
                  ((_handle('2'),), 'pending_cleaning'))
    t = tree.build_tree('n', ROOT, [dev])
    _dev_rp, region0, region1 = t.providers
    assert region0.inventories['FPGA']['reserved'] == 0
    assert region1.inventories['FPGA']['reserved'] == 1
    assert t.moved == {}


def test_some_regions_behind_one_function_share_the_first_ones_provider():
    dev = _fpga()
    third = dataclasses.replace(dev.deployables[1], uuid='dep-2',
                                name='region2')
    dev = _behind(dataclasses.replace(
        dev, deployables=dev.deployables + (third,)),
        ((_handle(),), 'available'), ((_handle(),), 'available'),
        ((_handle('5'),), 'available'))
    t = tree.build_tree('n', ROOT, [dev])
    names = [p.name for p in t.providers]
    assert names == ['n_0000:5e:00.0', 'n_0000:5e:00.0_region0',
                     'n_0000:5e:00.0_region2']
    assert t.deployable_rps['dep-0'] == t.deployable_rps['dep-1'] == \
        t.providers[1].uuid


def _choose(dev, group, region_type=None, loaded=None):
    """inventory/views.choose_member asked with Placement's mismatch, as
    the bind asks it."""
    return views.choose_member(
        dev, dev.deployables,
        lambda dep: tree.mismatch(dev, dep, group, region_type), loaded)


def test_a_bind_takes_the_sibling_that_serves_its_group():
    dev = _behind(_fpga(), ((_handle(),), 'available'),
                  ((_handle(),), 'available'))
    fn = {'resources:FPGA': '1',
          'trait:CUSTOM_FUNCTION_ID_A1B2_C3': 'required'}
    assert _choose(dev, fn)[0].name == 'region0'
    no_fn = {'resources:FPGA': '1',
             'trait:CUSTOM_FUNCTION_ID_A1B2_C3': 'forbidden'}
    assert _choose(dev, no_fn)[0].name == 'region1'
    # Preferred: the one that needs no programming.
    loaded = _choose(dev, {'resources:FPGA': 1},
                     loaded=lambda d: d.name == 'region1')
    assert loaded[0].name == 'region1'
    too_big = {'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': '4096'}
    chosen, why = _choose(dev, too_big)
    assert chosen is None and 'less than 4096' in why
    other_type = _choose(dev, {'resources:FPGA': 1}, region_type='beef')
    assert other_type[0] is None and 'region type beef' in other_type[1]


def test_a_bind_never_takes_a_sibling_that_may_not_be_bound():
    dev = _behind(_fpga(), ((_handle(in_use=True),), 'allocated'),
                  ((_handle(held_by=('arq-1', 'region0')),), 'available'))
    chosen, why = _choose(dev, {'resources:FPGA': '1'})
    assert chosen is None
    assert why == ('region0: no free attach handle; '
                   'region1: unavailable [handle_shared_in_use]: its PCI '
                   'function (or mdev) is attached through a sibling '
                   'deployable that shares it; held by ARQ arq-1 on '
                   'region0')


def test_a_bind_refused_on_an_unhealthy_card_says_why():
    dev = _behind(_fpga(health='unhealthy',
                        health_reason='catfatal_errors 0x4'),
                  ((_handle(),), 'available'), ((_handle(),), 'available'))
    chosen, why = _choose(dev, {'resources:FPGA': '1'})
    assert chosen is None
    assert why == '; '.join(
        '%s: unavailable [unhealthy]: %s (catfatal_errors 0x4)'
        % (name, views.REASONS['unhealthy'])
        for name in ('region0', 'region1'))

"""The fake driver: a simulated DFL host, read by the real DFL reader."""
import hashlib
import time

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import base
from cyborg_lite.drivers import fake

TYPE_A = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'
TYPE_B = 'f3c9941350814aadbced07eb84a6d0bb'
INITIAL = 'd8424dc4a4a3c413f89e433683f9040b'
NEW_AFU = '850adcc2e6a4433b9ee9a2bcd19c1d28'
CARD0 = '0000:5e:00.0'
CARD1 = '0000:5f:00.0'


@pytest.fixture
def fake_conf(conf, tmp_path):
    conf.set_override('state_dir', str(tmp_path / 'fake'),
                      group='fake_driver')
    conf.set_override('program_delay', 0, group='fake_driver')
    return conf


def _driver(conf, **overrides):
    for key, value in overrides.items():
        conf.set_override(key, value, group='fake_driver')
    driver = fake.FakeDriver(conf)
    driver.name = 'fake'
    return driver


def test_default_host_is_two_cards_of_two_regions(fake_conf):
    records = _driver(fake_conf).discover()
    assert [r.identity for r in records] == [CARD0, CARD1]
    for record in records:
        assert (record.type, record.vendor, record.health) == \
            ('FPGA', '0x8086', 'healthy')
        assert record.vendor_board_info['simulated'] is True
        assert [d.name for d in record.deployables] == ['region0',
                                                        'region1']
        for dep in record.deployables:
            assert (dep.region_type, dep.function_id,
                    dep.local_memory_mb) == (TYPE_A, INITIAL, 8192)
        assert device_records.DeviceRecord.from_dict(
            record.to_dict()) == record


def test_layout_follows_the_options(fake_conf):
    records = _driver(fake_conf, num_cards=3, regions_per_card=1,
                      local_memory_mb=512,
                      region_types=[TYPE_A, TYPE_B]).discover()
    assert len(records) == 3
    assert [r.deployables[0].region_type for r in records] == \
        [TYPE_A, TYPE_B, TYPE_A]
    assert {r.deployables[0].local_memory_mb for r in records} == {512}


def test_no_cards_is_an_empty_host(fake_conf):
    assert _driver(fake_conf, num_cards=0).discover() == []


def test_program_gbs_loads_its_accelerator_type(fake_conf, make_gbs):
    driver = _driver(fake_conf)
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e',
                     '850adcc2-e6a4-433b-9ee9-a2bcd19c1d28')
    driver.program(CARD1, 'region1', image)
    assert driver.loaded_function(CARD1, 'region1') == NEW_AFU
    assert driver.loaded_function(CARD1, 'region0') == INITIAL
    [card1] = [r for r in driver.discover() if r.identity == CARD1]
    assert card1.deployables[1].function_id == NEW_AFU


def test_programmed_function_survives_a_restart(fake_conf, make_gbs):
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    _driver(fake_conf).program(CARD0, 'region0', image)
    restarted = _driver(fake_conf)
    assert restarted.loaded_function(CARD0, 'region0') == NEW_AFU


def test_changed_layout_rebuilds_the_tree(fake_conf):
    _driver(fake_conf).discover()
    records = _driver(fake_conf, num_cards=1).discover()
    assert [r.identity for r in records] == [CARD0]


def test_headerless_image_function_is_its_sha256_prefix(fake_conf,
                                                        tmp_path):
    image = tmp_path / 'plain.rbf'
    image.write_bytes(b'raw bits' * 1000)
    driver = _driver(fake_conf)
    driver.program(CARD0, 'region1', str(image))
    expected = hashlib.sha256(image.read_bytes()).hexdigest()[:32]
    assert driver.loaded_function(CARD0, 'region1') == expected


def test_image_for_another_region_type_is_refused(fake_conf, make_gbs):
    driver = _driver(fake_conf)
    image = make_gbs('f3c99413-5081-4aad-bced-07eb84a6d0bb', NEW_AFU)
    with pytest.raises(exception.ProgrammingError, match='region type'):
        driver.program(CARD0, 'region0', image)
    assert driver.loaded_function(CARD0, 'region0') == INITIAL


def test_fail_program_injects_a_failure(fake_conf, make_gbs):
    driver = _driver(fake_conf, fail_program=True)
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with pytest.raises(exception.ProgrammingError, match='simulated'):
        driver.program(CARD0, 'region0', image)
    assert driver.loaded_function(CARD0, 'region0') == INITIAL


def test_failure_injection_per_region(fake_conf, make_gbs):
    driver = _driver(fake_conf,
                     fail_program_regions=['%s/region1' % CARD0])
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with pytest.raises(exception.ProgrammingError):
        driver.program(CARD0, 'region1', image)
    driver.program(CARD0, 'region0', image)
    assert driver.loaded_function(CARD0, 'region0') == NEW_AFU
    assert driver.loaded_function(CARD0, 'region1') == INITIAL


def test_program_takes_the_configured_delay(fake_conf, make_gbs):
    driver = _driver(fake_conf, program_delay=0.2)
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    start = time.monotonic()
    driver.program(CARD0, 'region0', image)
    assert time.monotonic() - start >= 0.2


def test_unreadable_image_is_a_programming_error(fake_conf, tmp_path):
    with pytest.raises(exception.ProgrammingError, match='cannot read'):
        _driver(fake_conf).program(CARD0, 'region0',
                                   str(tmp_path / 'nope.gbs'))


def test_unknown_region_is_a_programming_error(fake_conf, tmp_path):
    image = tmp_path / 'x.rbf'
    image.write_bytes(b'bits')
    with pytest.raises(exception.ProgrammingError, match='region9'):
        _driver(fake_conf).program(CARD0, 'region9', str(image))


def test_garbage_in_the_simulated_tree_is_parsed_like_sysfs(fake_conf,
                                                            tmp_path):
    driver = _driver(fake_conf)
    driver.discover()
    afu = tmp_path / 'fake/sys/class/fpga_region/region0/dfl-port.0/afu_id'
    afu.write_text('not-an-id\n')
    [card0, card1] = driver.discover()
    assert card0.health == 'degraded'
    assert card0.deployables[0].function_id is None
    assert card1.health == 'healthy'


def test_unusable_state_dir_is_a_driver_error(fake_conf, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    driver = _driver(fake_conf, state_dir=str(blocker / 'fake'))
    with pytest.raises(exception.DriverError, match='simulated tree'):
        driver.discover()


def _pci(root, address):
    return root / 'sys/bus/pci/devices' / address


def test_sriov_gives_each_region_its_own_vf(fake_conf):
    records = _driver(fake_conf, sriov=True, regions_per_card=3).discover()
    card0 = records[0]
    handles = [d.attach_handles[0].attach_info for d in card0.deployables]
    assert [device_records.pci_address(h) for h in handles] == [
        '0000:5e:00.1', '0000:5e:00.2', '0000:5e:00.3']
    assert card0.shared_groups() == {}
    assert card0.vendor_board_info['vfs'] == 3
    assert [d.region_type for d in card0.deployables] == [TYPE_A] * 3


def test_sriov_tree_is_laid_out_as_on_a_pac(fake_conf, tmp_path):
    _driver(fake_conf, sriov=True).discover()
    root = tmp_path / 'fake'
    pf = _pci(root, CARD0)
    assert (pf / 'sriov_totalvfs').read_bytes() == b'2\n'
    assert (pf / 'sriov_numvfs').read_bytes() == b'2\n'
    assert (pf / 'virtfn0').resolve() == _pci(root, '0000:5e:00.1').resolve()
    assert (pf / 'virtfn1').resolve() == _pci(root, '0000:5e:00.2').resolve()
    vf1 = _pci(root, '0000:5e:00.2')
    assert (vf1 / 'physfn').resolve() == pf.resolve()
    assert (vf1 / 'device').read_bytes() == b'0x09c5\n'
    assert (vf1 / 'vendor').read_bytes() == b'0x8086\n'
    # The FME stays on the PF; the port moved to the VF's base region.
    [pf_region] = (pf / 'fpga_region').iterdir()
    assert sorted(p.name for p in pf_region.iterdir()) == ['dfl-fme.0']
    [vf_region] = (vf1 / 'fpga_region').iterdir()
    assert [p.name for p in vf_region.iterdir()] == ['dfl-port.1']
    assert (vf_region / 'dfl-port.1' / 'id').read_bytes() == b'1\n'


def test_without_sriov_the_regions_of_a_card_share_the_pf(fake_conf):
    card0 = _driver(fake_conf).discover()[0]
    pair = frozenset({'region0', 'region1'})
    assert card0.shared_groups() == {'region0': pair, 'region1': pair}
    assert device_records.pci_address(
        card0.deployables[0].attach_handles[0].attach_info) == CARD0


def test_programming_reaches_a_port_behind_its_vf(fake_conf, make_gbs):
    driver = _driver(fake_conf, sriov=True)
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    driver.program(CARD1, 'region1', image)
    assert driver.loaded_function(CARD1, 'region1') == NEW_AFU
    assert driver.loaded_function(CARD1, 'region0') == INITIAL


def test_switching_sriov_rebuilds_the_tree(fake_conf):
    _driver(fake_conf).discover()
    records = _driver(fake_conf, sriov=True).discover()
    assert records[0].shared_groups() == {}


# --- cleaning ---------------------------------------------------------------

SCRUB = '00000000000000000000000000000000'


def test_clean_wipes_the_regions_local_memory(fake_conf):
    driver = _driver(fake_conf, clean_delay=0)
    memory = driver.local_memory_path(CARD0, 'region1')
    with open(memory, 'w') as f:
        f.write('tenant secrets')
    other = driver.local_memory_path(CARD0, 'region0')
    with open(other, 'w') as f:
        f.write('neighbour data')
    driver.clean(CARD0, 'region1')
    with open(memory) as f:
        assert f.read() == ''
    with open(other) as f:
        assert f.read() == 'neighbour data'
    # without a scrub function the loaded one stays
    assert driver.loaded_function(CARD0, 'region1') == INITIAL
    assert isinstance(driver, base.CleaningInterface)


def test_clean_loads_the_scrub_function_when_configured(fake_conf,
                                                        make_gbs):
    driver = _driver(fake_conf, clean_delay=0, scrub_function_id=SCRUB)
    driver.program(CARD1, 'region0', make_gbs(
        '9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU))
    driver.clean(CARD1, 'region0')
    assert driver.loaded_function(CARD1, 'region0') == SCRUB
    assert driver.loaded_function(CARD1, 'region1') == INITIAL
    [card1] = [r for r in driver.discover() if r.identity == CARD1]
    assert card1.deployables[0].function_id == SCRUB


def test_clean_is_idempotent_and_works_behind_vfs(fake_conf):
    driver = _driver(fake_conf, clean_delay=0, sriov=True,
                     scrub_function_id=SCRUB)
    driver.clean(CARD0, 'region1')
    driver.clean(CARD0, 'region1')
    assert driver.loaded_function(CARD0, 'region1') == SCRUB


@pytest.mark.parametrize('overrides', [
    {'fail_clean': True},
    {'fail_clean_regions': ['%s/region0' % CARD0]}])
def test_clean_failure_injection_leaves_the_region_dirty(fake_conf,
                                                         overrides):
    driver = _driver(fake_conf, clean_delay=0, scrub_function_id=SCRUB,
                     **overrides)
    memory = driver.local_memory_path(CARD0, 'region0')
    with open(memory, 'w') as f:
        f.write('tenant secrets')
    with pytest.raises(exception.CleaningError, match='simulated'):
        driver.clean(CARD0, 'region0')
    with open(memory) as f:
        assert f.read() == 'tenant secrets'
    assert driver.loaded_function(CARD0, 'region0') == INITIAL


def test_clean_takes_the_configured_delay(fake_conf, monkeypatch):
    slept = []
    monkeypatch.setattr(fake.time, 'sleep', slept.append)
    _driver(fake_conf, clean_delay=7.5).clean(CARD0, 'region0')
    assert slept == [7.5]


def test_cleaning_an_unknown_region_is_a_cleaning_error(fake_conf):
    with pytest.raises(exception.CleaningError, match='region9'):
        _driver(fake_conf).clean(CARD0, 'region9')


# --- the whole card ---------------------------------------------------------


def test_whole_card_is_reported_through_the_pf_of_an_sriov_card(fake_conf):
    records = _driver(fake_conf, sriov=True, whole_card=True,
                      regions_per_card=3).discover()
    names = [d.name for d in records[0].deployables]
    assert names == ['region0', 'region1', 'region2', 'card']
    card = records[0].deployables[-1]
    assert device_records.pci_address(
        card.attach_handles[0].attach_info) == CARD0
    assert 'CUSTOM_FPGA_WHOLE_CARD' in card.traits
    assert (card.resource_class, card.num_accelerators,
            card.region_type) == ('FPGA', 1, None)
    assert card.attributes == {'regions': '3'}
    # Each region names the card: its bind looks at it (db/devices.py).
    assert {d.attributes.get('whole_card')
            for d in records[0].deployables[:-1]} == {'card'}
    assert records[0].shared_groups() == {}


def test_no_whole_card_where_the_regions_share_the_pf_or_by_default(
        fake_conf):
    shared = _driver(fake_conf, whole_card=True).discover()
    assert [d.name for d in shared[0].deployables] == ['region0', 'region1']
    default = _driver(fake_conf, sriov=True, whole_card=False).discover()
    assert [d.name for d in default[0].deployables] == ['region0', 'region1']


def test_no_whole_card_for_a_single_region(fake_conf):
    records = _driver(fake_conf, sriov=True, whole_card=True,
                      regions_per_card=1).discover()
    assert [d.name for d in records[0].deployables] == ['region0']


def test_cleaning_the_whole_card_leaves_its_regions_to_their_own(fake_conf):
    driver = _driver(fake_conf, sriov=True, whole_card=True)
    driver.discover()
    driver.clean(CARD0, 'card')      # nothing of its own to wipe
    with pytest.raises(exception.CleaningError):
        driver.clean(CARD0, 'region7')

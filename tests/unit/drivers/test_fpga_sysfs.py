"""fpga_sysfs driver against the DFL fixture host (healthy and broken)."""
import ctypes
import errno
import logging
import os
import shutil

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import base
from cyborg_lite.drivers import fpga_sysfs

PAC = '0000:5e:00.0'
D5005 = '0000:af:00.0'
COMPAT_PAC = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'
COMPAT_D5005 = 'f3c9941350814aadbced07eb84a6d0bb'
NLB0 = 'd8424dc4a4a3c413f89e433683f9040b'
NEW_AFU = '850adcc2e6a4433b9ee9a2bcd19c1d28'
PAC_DIR = 'sys/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0'
PAC_REGION = PAC_DIR + '/fpga_region/region0'
# The PAC's one port is exposed through its VF (SR-IOV on).
PAC_VF_REGION = ('sys/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.1/'
                 'fpga_region/region5')
D5005_REGION = ('sys/devices/pci0000:ae/0000:ae:00.0/0000:af:00.0/'
                'fpga_region/region2')


def _driver(conf, root, local_memory_mb=4096):
    conf.set_override('sysfs_root', str(root / 'sys'), group='fpga_sysfs')
    conf.set_override('dev_root', str(root / 'dev'), group='fpga_sysfs')
    conf.set_override('local_memory_mb', local_memory_mb,
                      group='fpga_sysfs')
    driver = fpga_sysfs.FpgaSysfsDriver(conf)
    driver.name = 'fpga_sysfs'
    return driver


def _by_identity(records):
    return {r.identity: r for r in records}


def test_healthy_host_reports_both_cards(conf, dfl_host):
    records = _by_identity(_driver(conf, dfl_host).discover())
    assert sorted(records) == [PAC, D5005]
    pac = records[PAC]
    assert (pac.type, pac.vendor, pac.model, pac.pci_address, pac.health) \
        == ('FPGA', '0x8086', 'Intel PAC Arria 10 GX', PAC, 'healthy')
    assert pac.std_board_info == {'vendor_id': '0x8086',
                                  'device_id': '0x09c4'}
    assert pac.vendor_board_info['bitstream_id'] == '0x23000410010309'
    [region] = pac.deployables
    assert (region.name, region.resource_class, region.region_type,
            region.function_id, region.local_memory_mb) == \
        ('region0', 'FPGA', COMPAT_PAC, NLB0, 4096)
    assert region.traits == ['CUSTOM_FPGA_INTEL',
                             'CUSTOM_FPGA_INTEL_PAC_A10']
    assert region.attributes == {'port': 'dfl-port.0',
                                 'fpga_region': 'region1'}


def test_sriov_port_attaches_through_its_vf(conf, dfl_host):
    pac = _by_identity(_driver(conf, dfl_host).discover())[PAC]
    [handle] = pac.deployables[0].attach_handles
    assert handle.attach_type == 'PCI'
    assert handle.attach_info == {'domain': '0000', 'bus': '5e',
                                  'device': '00', 'function': '1'}


def test_two_port_card_without_vfs_attaches_through_the_pf(conf, dfl_host):
    card = _by_identity(_driver(conf, dfl_host).discover())[D5005]
    assert card.model == 'Intel PAC D5005'
    assert [d.name for d in card.deployables] == ['region0', 'region1']
    assert [d.function_id for d in card.deployables] == [
        '00000000000000000000000000000000', NEW_AFU]
    assert {d.region_type for d in card.deployables} == {COMPAT_D5005}
    for dep in card.deployables:
        assert dep.attach_handles[0].attach_info == {
            'domain': '0000', 'bus': 'af', 'device': '00', 'function': '0'}


def test_records_survive_the_rpc_round_trip(conf, dfl_host):
    for record in _driver(conf, dfl_host).discover():
        assert device_records.DeviceRecord.from_dict(
            record.to_dict()) == record


def test_no_fpga_subsystem_is_an_empty_answer(conf, tmp_path):
    (tmp_path / 'sys').mkdir()
    assert _driver(conf, tmp_path).discover() == []


def test_this_machines_real_sys_does_not_crash(conf):
    conf.set_override('sysfs_root', '/sys', group='fpga_sysfs')
    records = fpga_sysfs.FpgaSysfsDriver(conf).discover()
    # This build host has no DFL cards (research/drivers/pci.md); any card
    # found on another host must still be a valid record.
    for record in records:
        device_records.DeviceRecord.from_dict(record.to_dict())
    if not os.path.isdir('/sys/class/fpga_region'):
        assert records == []


@pytest.mark.parametrize('content', ['zz42\n', 'd8424dc4-a4a3-c413\n',
                                     '\xff\xfe garbage'])
def test_garbage_afu_id_degrades_only_that_card(conf, dfl_host, content,
                                                caplog):
    path = dfl_host / PAC_VF_REGION / 'dfl-port.0' / 'afu_id'
    path.write_bytes(content.encode('latin-1'))
    with caplog.at_level(logging.WARNING):
        records = _by_identity(_driver(conf, dfl_host).discover())
    pac = records[PAC]
    assert pac.health == 'degraded'
    assert pac.deployables[0].function_id is None
    assert pac.deployables[0].region_type == COMPAT_PAC
    assert records[D5005].health == 'healthy'
    assert 'afu_id' in caplog.text


def test_missing_compat_id_leaves_region_type_unknown(conf, dfl_host):
    os.unlink(dfl_host / PAC_REGION /
              'dfl-fme.0/dfl-fme-region.1/fpga_region/region1/compat_id')
    pac = _by_identity(_driver(conf, dfl_host).discover())[PAC]
    assert pac.health == 'degraded'
    assert pac.deployables[0].region_type is None


@pytest.mark.parametrize('content', ['-1\n', 'zero\n', '999\n'])
def test_bad_port_id_drops_the_port_and_degrades(conf, dfl_host, content):
    (dfl_host / D5005_REGION / 'dfl-port.2' / 'id').write_text(content)
    card = _by_identity(_driver(conf, dfl_host).discover())[D5005]
    assert card.health == 'degraded'
    assert [d.name for d in card.deployables] == ['region0']


@pytest.mark.parametrize('content', ['intel\n', '', '0x\n', '0x8086' * 900])
def test_garbage_vendor_skips_only_that_card(conf, dfl_host, content,
                                             caplog):
    (dfl_host / PAC_DIR / 'vendor').write_text(content)
    with caplog.at_level(logging.WARNING):
        records = _driver(conf, dfl_host).discover()
    assert [r.identity for r in records] == [D5005]
    assert 'Skipping DFL card' in caplog.text


def test_missing_device_file_skips_the_card(conf, dfl_host):
    os.unlink(dfl_host / PAC_DIR / 'device')
    assert [r.identity for r in _driver(conf, dfl_host).discover()] == \
        [D5005]


def _manager(root):
    return root / PAC_REGION / 'dfl-fme.0/dfl-fme-mgr.0/fpga_manager/fpga0'


def test_manager_error_state_makes_the_card_unhealthy(conf, dfl_host):
    (_manager(dfl_host) / 'state').write_text('write error\n')
    pac = _by_identity(_driver(conf, dfl_host).discover())[PAC]
    assert pac.health == 'unhealthy'


def test_reconfiguration_errors_in_status_degrade(conf, dfl_host):
    (_manager(dfl_host) / 'status').write_text(
        'reconfig CRC error\nreconfig incompatible image\n')
    pac = _by_identity(_driver(conf, dfl_host).discover())[PAC]
    assert pac.health == 'degraded'


class FakeFme:
    """Captures DFL_FPGA_FME_PORT_PR calls; optionally loads an AFU.

    This stands in for the kernel and the card: the only fake allowed in
    these tests, at the ioctl edge.
    """

    def __init__(self, afu_path=None, new_afu=None, error=None):
        self.calls = []
        self.afu_path = afu_path
        self.new_afu = new_afu
        self.error = error

    def __call__(self, fd, request, arg):
        argsz, flags, port_id, size, address = \
            fpga_sysfs.PORT_PR_ARGS.unpack(arg)
        self.calls.append({
            'fd_target': os.readlink('/proc/self/fd/%d' % fd),
            'request': request, 'argsz': argsz, 'flags': flags,
            'port_id': port_id, 'size': size,
            'buffer': ctypes.string_at(address, size)})
        if self.error:
            raise OSError(self.error, os.strerror(self.error))
        if self.new_afu:
            self.afu_path.write_text(self.new_afu + '\n')
        return 0


def test_program_sends_the_stripped_bitstream_through_the_ioctl(
        conf, dfl_host, make_gbs):
    driver = _driver(conf, dfl_host)
    afu_path = dfl_host / D5005_REGION / 'dfl-port.2' / 'afu_id'
    driver.ioctl = FakeFme(afu_path, NLB0)
    payload = b'\x00RAW-PR-BITSTREAM\x00' * 100
    image = make_gbs('f3c99413-5081-4aad-bced-07eb84a6d0bb',
                     'd8424dc4-a4a3-c413-f89e-433683f9040b', payload)

    driver.program(D5005, 'region1', image)

    [call] = driver.ioctl.calls
    assert call['request'] == 0xB680
    assert call['fd_target'] == str(dfl_host / 'dev' / 'dfl-fme.1')
    assert (call['argsz'], call['flags'], call['port_id'], call['size']) \
        == (24, 0, 1, len(payload))
    assert call['buffer'] == payload
    assert driver.loaded_function(D5005, 'region1') == NLB0


def test_image_for_another_interface_never_reaches_the_ioctl(
        conf, dfl_host, make_gbs):
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeFme()
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with pytest.raises(exception.ProgrammingError, match='compat_id'):
        driver.program(D5005, 'region0', image)
    assert driver.ioctl.calls == []


def test_headerless_image_is_refused(conf, dfl_host, tmp_path):
    image = tmp_path / 'image.rbf'
    image.write_bytes(b'\x00\x01\x02 raw rbf bits')
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeFme()
    with pytest.raises(exception.ProgrammingError, match='GBS'):
        driver.program(PAC, 'region0', str(image))
    assert driver.ioctl.calls == []


def test_truncated_gbs_is_refused(conf, dfl_host, make_gbs):
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with open(image, 'r+b') as f:
        f.truncate(30)
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeFme()
    with pytest.raises(exception.ProgrammingError):
        driver.program(PAC, 'region0', image)
    assert driver.ioctl.calls == []


def test_unreadable_image_is_a_programming_error(conf, dfl_host, tmp_path):
    with pytest.raises(exception.ProgrammingError, match='cannot read'):
        _driver(conf, dfl_host).program(PAC, 'region0',
                                        str(tmp_path / 'missing.gbs'))


def test_kernel_error_reports_the_manager_status(conf, dfl_host, make_gbs):
    (_manager(dfl_host) / 'status').write_text('reconfig CRC error\n')
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeFme(error=errno.EIO)
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with pytest.raises(exception.ProgrammingError,
                       match='reconfig CRC error'):
        driver.program(PAC, 'region0', image)
    assert driver.loaded_function(PAC, 'region0') == NLB0


def test_programming_is_verified_by_reading_afu_id_back(
        conf, dfl_host, make_gbs):
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeFme()  # the card "accepts" but loads nothing
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with pytest.raises(exception.ProgrammingError, match='reads back'):
        driver.program(PAC, 'region0', image)


@pytest.mark.parametrize('identity,region', [
    ('0000:01:00.0', 'region0'), (PAC, 'region7')])
def test_unknown_target_is_a_programming_error(conf, dfl_host, make_gbs,
                                               identity, region):
    image = make_gbs('9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e', NEW_AFU)
    with pytest.raises(exception.ProgrammingError, match=identity):
        _driver(conf, dfl_host).program(identity, region, image)


def test_regions_behind_the_pf_are_reported_as_sharing_it(conf, dfl_host):
    records = _by_identity(_driver(conf, dfl_host).discover())
    pair = frozenset({'region0', 'region1'})
    assert records[D5005].shared_groups() == {'region0': pair,
                                              'region1': pair}
    assert records[PAC].shared_groups() == {}


def test_a_vf_whose_port_is_not_visible_hides_only_that_region(
        conf, dfl_host):
    # A VF passed through to a guest is bound to vfio-pci: the host sees
    # no port on it until it comes back.
    shutil.rmtree(dfl_host / PAC_VF_REGION / 'dfl-port.0')
    pac = _by_identity(_driver(conf, dfl_host).discover())[PAC]
    assert pac.deployables == []
    assert pac.vendor_board_info['vfs'] == 1


# --- cleaning between tenants -------------------------------------------

class FakeCard:
    """Stands in for the kernel at the ioctl edge: records every call;
    a port reset succeeds (or fails with ``reset_error``), a PR loads
    ``pr_loads`` into ``afu_path``."""

    def __init__(self, afu_path=None, pr_loads=None, reset_error=None):
        self.calls = []
        self.afu_path, self.pr_loads = afu_path, pr_loads
        self.reset_error = reset_error

    def __call__(self, fd, request, arg=0):
        call = {'fd_target': os.readlink('/proc/self/fd/%d' % fd),
                'request': request}
        if request == fpga_sysfs.DFL_FPGA_FME_PORT_PR:
            call['port_id'] = fpga_sysfs.PORT_PR_ARGS.unpack(arg)[2]
        else:
            call['arg'] = arg
        self.calls.append(call)
        if request == fpga_sysfs.DFL_FPGA_PORT_RESET and self.reset_error:
            raise OSError(self.reset_error, os.strerror(self.reset_error))
        if request == fpga_sysfs.DFL_FPGA_FME_PORT_PR and self.pr_loads:
            self.afu_path.write_text(self.pr_loads + '\n')
        return 0


@pytest.mark.parametrize('identity,region,port_dev', [
    (PAC, 'region0', 'dfl-port.0'),        # port behind its VF
    (D5005, 'region1', 'dfl-port.2')])     # port behind the PF
def test_clean_resets_the_port_through_its_device(conf, dfl_host, identity,
                                                  region, port_dev):
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeCard()
    driver.clean(identity, region)
    assert driver.ioctl.calls == [{
        'fd_target': str(dfl_host / 'dev' / port_dev),
        'request': 0xB640, 'arg': 0}]
    assert isinstance(driver, base.CleaningInterface)


def test_clean_programs_the_scrub_image_of_the_region_type(
        conf, dfl_host, make_gbs):
    scrub = make_gbs('f3c99413-5081-4aad-bced-07eb84a6d0bb', NLB0,
                     filename='blank.gbs')
    conf.set_override('scrub_bitstreams', ['%s:%s' % (COMPAT_D5005, scrub)],
                      group='fpga_sysfs')
    driver = _driver(conf, dfl_host)
    afu = dfl_host / D5005_REGION / 'dfl-port.2' / 'afu_id'
    driver.ioctl = FakeCard(afu, pr_loads=NLB0)
    assert driver.loaded_function(D5005, 'region1') == NEW_AFU
    driver.clean(D5005, 'region1')
    assert [c['request'] for c in driver.ioctl.calls] == [0xB640, 0xB680]
    assert driver.ioctl.calls[1]['port_id'] == 1
    assert driver.ioctl.calls[1]['fd_target'] == str(
        dfl_host / 'dev' / 'dfl-fme.1')
    assert driver.loaded_function(D5005, 'region1') == NLB0


def test_a_region_without_a_scrub_image_gets_the_reset_only(
        conf, dfl_host, make_gbs):
    scrub = make_gbs('f3c99413-5081-4aad-bced-07eb84a6d0bb', NLB0)
    conf.set_override('scrub_bitstreams', ['%s:%s' % (COMPAT_D5005, scrub)],
                      group='fpga_sysfs')
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeCard()
    driver.clean(PAC, 'region0')
    assert [c['request'] for c in driver.ioctl.calls] == [0xB640]


def test_a_failed_scrub_is_a_cleaning_error(conf, dfl_host, make_gbs):
    scrub = make_gbs('f3c99413-5081-4aad-bced-07eb84a6d0bb', NLB0)
    conf.set_override('scrub_bitstreams', ['%s:%s' % (COMPAT_D5005, scrub)],
                      group='fpga_sysfs')
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeCard()   # the PR "succeeds" but loads nothing
    with pytest.raises(exception.CleaningError, match='scrub image'):
        driver.clean(D5005, 'region0')


def test_a_refused_port_reset_is_a_cleaning_error(conf, dfl_host):
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeCard(reset_error=errno.EBUSY)
    with pytest.raises(exception.CleaningError, match='DFL_FPGA_PORT_RESET'):
        driver.clean(PAC, 'region0')


@pytest.mark.parametrize('identity,region', [
    ('0000:01:00.0', 'region0'), (PAC, 'region7')])
def test_cleaning_an_unknown_region_touches_nothing(conf, dfl_host,
                                                    identity, region):
    driver = _driver(conf, dfl_host)
    driver.ioctl = FakeCard()
    with pytest.raises(exception.CleaningError, match=identity):
        driver.clean(identity, region)
    assert driver.ioctl.calls == []


def test_scrub_entries_are_checked(conf, dfl_host):
    with pytest.raises(ValueError):
        conf.set_override('scrub_bitstreams', ['%s:relative.gbs'
                                               % COMPAT_PAC],
                          group='fpga_sysfs')
    conf.set_override('scrub_bitstreams', ['%s:/a.gbs' % COMPAT_PAC,
                                           '%s:/b.gbs' % COMPAT_PAC],
                      group='fpga_sysfs')
    with pytest.raises(exception.ConfigError, match='twice'):
        _driver(conf, dfl_host)

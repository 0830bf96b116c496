"""nvidia driver: recorded nvidia-smi XML run through a stand-in tool."""
import logging
import shutil

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import base
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import nvidia_cleaning
from cyborg_lite.drivers import safe_xml
from cyborg_lite.drivers import sysfs
from tests.unit.drivers.conftest import fixture_path

MIG_GPU = '0000:3b:00.0'
WHOLE_GPU = '0000:af:00.0'


@pytest.fixture
def tool(tmp_path):
    """Make an executable that behaves like nvidia-smi: prints, exits."""
    def _make(output_file=None, exit_code=0, stderr='', sleep=0):
        script = tmp_path / 'nvidia-smi'
        lines = ['#!/bin/sh',
                 '[ "$1 $2" = "-q -x" ] || { echo "bad args: $*" >&2; '
                 'exit 64; }']
        if sleep:
            lines.append('sleep %s' % sleep)
        if output_file:
            lines.append('cat "%s"' % output_file)
        if stderr:
            lines.append('echo "%s" >&2' % stderr)
        lines.append('exit %d' % exit_code)
        script.write_text('\n'.join(lines) + '\n')
        script.chmod(0o755)
        return str(script)
    return _make


def _driver(conf, tool_path, sysfs_root=None, timeout=30):
    conf.set_override('nvidia_smi_path', tool_path, group='nvidia_driver')
    conf.set_override('timeout', timeout, group='nvidia_driver')
    conf.set_override('sysfs_root', sysfs_root or '/nonexistent',
                      group='nvidia_driver')
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    return driver


def _by_identity(records):
    return {r.identity: r for r in records}


def test_two_gpu_host_with_mig(conf, tool):
    records = _by_identity(_driver(conf, tool(fixture_path(
        'nvidia', 'two_gpus_mig.xml'))).discover())
    assert sorted(records) == [MIG_GPU, WHOLE_GPU]
    whole = records[WHOLE_GPU]
    assert (whole.type, whole.vendor, whole.model, whole.pci_address) == \
        ('GPU', '0x10de', 'NVIDIA A100 80GB PCIe', WHOLE_GPU)
    assert whole.std_board_info == {'vendor_id': '0x10de',
                                    'device_id': '0x20b5'}
    assert whole.vendor_board_info['uuid'] == \
        'GPU-7a1c9b3e-0f4d-4e2a-9c61-2b8f5d3e1a07'
    [pgpu] = whole.deployables
    assert (pgpu.name, pgpu.resource_class, pgpu.local_memory_mb) == \
        ('pgpu', 'PGPU', 81920)
    assert pgpu.traits == ['CUSTOM_GPU_NVIDIA',
                           'CUSTOM_GPU_NVIDIA_A100_80GB_PCIE']
    assert pgpu.attach_handles[0].attach_info == {
        'domain': '0000', 'bus': 'af', 'device': '00', 'function': '0'}


def test_mig_instances_are_grouped_children(conf, tool):
    records = _by_identity(_driver(conf, tool(fixture_path(
        'nvidia', 'two_gpus_mig.xml'))).discover())
    migs = {d.name: d for d in records[MIG_GPU].deployables}
    assert sorted(migs) == ['mig_14sm_9728mb', 'mig_42sm_40192mb']
    big = migs['mig_42sm_40192mb']
    assert (big.resource_class, big.num_accelerators, big.local_memory_mb,
            big.attributes['gpu_instance_ids']) == ('VGPU', 2, 40192, '1,2')
    assert migs['mig_14sm_9728mb'].num_accelerators == 1


def test_an_instance_gone_since_the_xml_was_read_is_not_offered():
    # The scan reads -q -x before its lock; -lgi under it lists what is
    # there now: an instance destroyed in between (a release's) is no
    # one's to offer.
    root = safe_xml.parse(open(fixture_path('nvidia', 'two_gpus_mig.xml'),
                               'rb').read(), 'xml')
    gpu = root.find('gpu')
    found = nvidia.mig_deployables(gpu, (), 'xml', present={2, 9})
    assert [(d.name, d.attributes['gpu_instance_ids']) for d in found] == \
        [('mig_42sm_40192mb', '2'), ('mig_14sm_9728mb', '9')]
    assert nvidia.mig_deployables(gpu, (), 'xml', skip={9},
                                  present={1, 9}) == [
        d for d in nvidia.mig_deployables(gpu, (), 'xml', skip={2, 9})]


def test_records_survive_the_rpc_round_trip(conf, tool):
    for record in _driver(conf, tool(fixture_path(
            'nvidia', 'two_gpus_mig.xml'))).discover():
        assert device_records.DeviceRecord.from_dict(
            record.to_dict()) == record


def test_vgpu_types_from_mdev_sysfs(conf, tool, tmp_path):
    sys_root = tmp_path / 'sys'
    shutil.copytree(fixture_path('nvidia', 'vgpu_sys'), sys_root,
                    symlinks=True)
    [gpu] = _driver(conf, tool(fixture_path('nvidia', 'vgpu_host.xml')),
                    str(sys_root)).discover()
    types = {d.name: d for d in gpu.deployables}
    assert sorted(types) == ['vgpu_nvidia-588', 'vgpu_nvidia-593']
    q4 = types['vgpu_nvidia-588']
    assert (q4.resource_class, q4.num_accelerators) == ('VGPU', 6)
    assert q4.attributes == {'mdev_type_name': 'NVIDIA A10-4Q',
                             'device_api': 'vfio-pci'}
    # Cyborg's MDEV handle, what Nova's libvirt driver reads: the
    # parent's address, asked_type; one vgpu_mark per instance, the one
    # made (devices/<uuid>) among them.
    assert {h.attach_type for h in q4.attach_handles} == {'MDEV'}
    assert [h.attach_info for h in q4.attach_handles] == [
        {'domain': '0000', 'bus': '3b', 'device': '00', 'function': '0',
         'asked_type': 'nvidia-588', 'vgpu_mark': 'nvidia-588_%d' % i}
        for i in range(6)]
    assert types['vgpu_nvidia-593'].num_accelerators == 0
    # Where the GPU sits comes from the same tree: its root; the fixture
    # has no numa_node file, which is unknown, never node 0.
    assert (gpu.topology.pcie_root, gpu.topology.pci_bus_id,
            gpu.topology.numa_node) == ('pci0000:3a', MIG_GPU, None)


def test_bad_vgpu_type_is_skipped(conf, tool, tmp_path):
    sys_root = tmp_path / 'sys'
    shutil.copytree(fixture_path('nvidia', 'vgpu_sys'), sys_root,
                    symlinks=True)
    avail = (sys_root / 'bus/pci/devices/0000:3b:00.0/mdev_supported_types/'
             'nvidia-593/available_instances')
    avail.write_text('-3\n')
    [gpu] = _driver(conf, tool(fixture_path('nvidia', 'vgpu_host.xml')),
                    str(sys_root)).discover()
    assert [d.name for d in gpu.deployables] == ['vgpu_nvidia-588']


def test_missing_tool_means_no_gpus(conf, tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        records = _driver(conf, str(tmp_path / 'no-such-smi')).discover()
    assert records == []
    assert 'not found' in caplog.text


def test_missing_tool_on_path_means_no_gpus(conf):
    assert _driver(conf, 'nvidia-smi-not-installed-here').discover() == []


def test_failing_tool_is_a_driver_error(conf, tool):
    smi = tool(exit_code=9, stderr='NVIDIA-SMI has failed because it '
               "couldn't communicate with the NVIDIA driver")
    with pytest.raises(exception.DriverError, match='communicate'):
        _driver(conf, smi).discover()


def test_hanging_tool_is_a_driver_error(conf, tool):
    with pytest.raises(exception.DriverError, match='timed out'):
        _driver(conf, tool(sleep=5), timeout=1).discover()


def test_empty_output_is_a_driver_error(conf, tool, tmp_path):
    empty = tmp_path / 'empty.xml'
    empty.write_text('\n')
    with pytest.raises(exception.DriverError, match='empty'):
        _driver(conf, tool(str(empty))).discover()


def test_truncated_xml_is_a_driver_error(conf, tool):
    with pytest.raises(exception.DriverError, match='well-formed'):
        _driver(conf, tool(fixture_path('nvidia',
                                        'truncated.xml'))).discover()


@pytest.mark.parametrize('document', [
    # billion laughs
    '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaa">'
    '<!ENTITY b "&a;&a;&a;&a;">]><nvidia_smi_log><gpu>&b;</gpu>'
    '</nvidia_smi_log>',
    # external entity (XXE)
    '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM '
    '"file:///etc/passwd">]><nvidia_smi_log>&x;</nvidia_smi_log>',
])
def test_entity_declarations_are_refused(conf, tool, tmp_path, document):
    path = tmp_path / 'evil.xml'
    path.write_text(document)
    with pytest.raises(exception.DriverError, match='refused'):
        _driver(conf, tool(str(path))).discover()


def test_other_xml_is_a_driver_error(conf, tool, tmp_path):
    path = tmp_path / 'other.xml'
    path.write_text('<html><body>oops</body></html>')
    with pytest.raises(exception.DriverError, match='nvidia_smi_log'):
        _driver(conf, tool(str(path))).discover()


@pytest.mark.parametrize('old,new', [
    ('<pci_bus_id>00000000:AF:00.0</pci_bus_id>',
     '<pci_bus_id>garbage</pci_bus_id>'),
    ('<total>81920 MiB</total>\n\t\t\t<reserved>634 MiB',
     '<total>-5 MiB</total>\n\t\t\t<reserved>634 MiB'),
])
def test_garbage_in_one_gpu_skips_only_that_gpu(conf, tool, tmp_path,
                                                old, new, caplog):
    text = open(fixture_path('nvidia', 'two_gpus_mig.xml')).read()
    assert old in text
    path = tmp_path / 'one_bad.xml'
    path.write_text(text.replace(old, new))
    with caplog.at_level(logging.WARNING):
        records = _driver(conf, tool(str(path))).discover()
    assert [r.identity for r in records] == [MIG_GPU]
    assert 'Skipping a GPU' in caplog.text


@pytest.mark.parametrize('raw,expected', [
    ('00000000:3B:00.0', '0000:3b:00.0'), ('0000:3b:00.1', '0000:3b:00.1'),
    ('00000001:0A:1F.7', '0001:0a:1f.7')])
def test_bus_id_normalisation(raw, expected):
    assert sysfs.normalise_pci_address(raw) == expected


@pytest.mark.parametrize('raw', ['100000000:3b:00.0', '00010000:3b:00.0',
                                 '0000:3b:00.8',
                                 '', None, '0000:3b:00'])
def test_bad_bus_ids_are_refused(raw):
    with pytest.raises(exception.HostDataError):
        sysfs.normalise_pci_address(raw)


# --- cleaning between tenants -------------------------------------------

class ToolRunner:
    """Stands in for tools.run_tool (the edge): records each nvidia-smi
    command and answers the reads from recorded outputs."""

    def __init__(self, xml='two_gpus_mig.xml', fail_on=None):
        self.commands = []
        self.xml = xml
        self.fail_on = fail_on

    def __call__(self, driver, argv, timeout):
        args = argv[1:]
        self.commands.append(args)
        if self.fail_on and args[:len(self.fail_on)] == self.fail_on:
            raise exception.DriverError(
                driver=driver, reason='%s exited with 3: In use by another '
                'client' % ' '.join(argv))
        if args == ['-q', '-x']:
            with open(fixture_path('nvidia', self.xml), 'rb') as f:
                return f.read()
        if args[:2] == ['mig', '-lgi']:
            with open(fixture_path('nvidia', 'mig_lgi_3b.txt'), 'rb') as f:
                return f.read()
        return b''


def _cleaner(conf, tool, runner, sysfs_root=None):
    driver = _driver(conf, tool(fixture_path('nvidia', runner.xml)),
                     sysfs_root)
    driver.run_tool = runner
    return driver


def test_a_whole_gpu_is_reset(conf, tool):
    runner = ToolRunner()
    driver = _cleaner(conf, tool, runner)
    driver.clean(WHOLE_GPU, 'pgpu')
    assert runner.commands == [['-q', '-x'], ['-r', '-i', WHOLE_GPU]]
    assert isinstance(driver, base.CleaningInterface)


def test_mig_instances_are_destroyed_and_made_again(conf, tool):
    runner = ToolRunner()
    _cleaner(conf, tool, runner).clean(MIG_GPU, 'mig_42sm_40192mb')
    assert runner.commands == [
        ['-q', '-x'],
        ['mig', '-lgi', '-i', MIG_GPU],
        ['mig', '-dci', '-i', MIG_GPU, '-gi', '1,2'],
        ['mig', '-dgi', '-i', MIG_GPU, '-gi', '1,2'],
        ['mig', '-cgi', '9,9', '-i', MIG_GPU, '-C']]


def test_only_the_cleaned_kind_of_mig_instance_is_touched(conf, tool):
    runner = ToolRunner()
    _cleaner(conf, tool, runner).clean(MIG_GPU, 'mig_14sm_9728mb')
    assert runner.commands[2:] == [
        ['mig', '-dci', '-i', MIG_GPU, '-gi', '9'],
        ['mig', '-dgi', '-i', MIG_GPU, '-gi', '9'],
        ['mig', '-cgi', '19', '-i', MIG_GPU, '-C']]


def test_gpu_instances_table_is_parsed_whole_rows_only():
    with open(fixture_path('nvidia', 'mig_lgi_3b.txt'), 'rb') as f:
        table = f.read()
    assert nvidia_cleaning.parse_gpu_instances(table) == {
        '1': '9', '2': '9', '9': '19'}
    assert nvidia_cleaning.parse_gpu_instances(
        b'No GPU instances found: Not Found\n') == {}


def test_an_instance_missing_from_the_table_destroys_nothing(conf, tool,
                                                             monkeypatch):
    runner = ToolRunner()
    driver = _cleaner(conf, tool, runner)
    monkeypatch.setattr(nvidia_cleaning, 'parse_gpu_instances',
                        lambda output: {'1': '9'})
    with pytest.raises(exception.CleaningError, match='no GPU instance 2'):
        driver.clean(MIG_GPU, 'mig_42sm_40192mb')
    assert [c[1] for c in runner.commands[1:]] == ['-lgi']


def test_a_refused_reset_is_a_cleaning_error(conf, tool):
    runner = ToolRunner(fail_on=['-r'])
    with pytest.raises(exception.CleaningError, match='In use'):
        _cleaner(conf, tool, runner).clean(WHOLE_GPU, 'pgpu')


def test_a_failed_destroy_stops_before_creating(conf, tool):
    runner = ToolRunner(fail_on=['mig', '-dgi'])
    with pytest.raises(exception.CleaningError):
        _cleaner(conf, tool, runner).clean(MIG_GPU, 'mig_14sm_9728mb')
    assert ['mig', '-cgi', '19', '-i', MIG_GPU, '-C'] not in runner.commands


def test_vgpu_types_are_not_cleaned_here(conf, tool, tmp_path):
    sys_root = tmp_path / 'sys'
    shutil.copytree(fixture_path('nvidia', 'vgpu_sys'), sys_root,
                    symlinks=True)
    runner = ToolRunner(xml='vgpu_host.xml')
    driver = _cleaner(conf, tool, runner, str(sys_root))
    with pytest.raises(exception.CleaningError, match='vGPU manager'):
        driver.clean(MIG_GPU, 'vgpu_nvidia-588')
    assert runner.commands == [['-q', '-x']]


@pytest.mark.parametrize('identity,name,message', [
    ('0000:01:00.0', 'pgpu', 'no NVIDIA GPU'),
    (MIG_GPU, 'pgpu', 'has no deployable pgpu')])
def test_cleaning_an_unknown_target_runs_nothing(conf, tool, identity, name,
                                                 message):
    runner = ToolRunner()
    with pytest.raises(exception.CleaningError, match=message):
        _cleaner(conf, tool, runner).clean(identity, name)
    assert runner.commands == [['-q', '-x']]


def test_without_nvidia_smi_cleaning_fails_clearly(conf):
    driver = _driver(conf, '/nonexistent/nvidia-smi')
    with pytest.raises(exception.CleaningError, match='not found'):
        driver.clean(WHOLE_GPU, 'pgpu')

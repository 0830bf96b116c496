"""The shared sysfs readers: absent is None, garbage is HostDataError."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.drivers import sysfs


def test_trailing_newline_is_dropped_and_absent_is_none(tmp_path):
    (tmp_path / 'state').write_text('power off\n')
    assert sysfs.read_text(str(tmp_path / 'state')) == 'power off'
    assert sysfs.read_text(str(tmp_path / 'missing')) is None


@pytest.mark.parametrize('data', [b'\xff\xfe\x00', b'x' * 5000])
def test_non_text_or_oversized_attribute_is_refused(tmp_path, data):
    (tmp_path / 'attr').write_bytes(data)
    with pytest.raises(exception.HostDataError):
        sysfs.read_text(str(tmp_path / 'attr'))


def test_directory_in_place_of_a_file_is_refused(tmp_path):
    (tmp_path / 'attr').mkdir()
    with pytest.raises(exception.HostDataError):
        sysfs.read_text(str(tmp_path / 'attr'))


@pytest.mark.parametrize('text,low,expected', [
    ('0\n', 0, 0), ('-1\n', -1, -1), ('17', 0, 17)])
def test_read_int(tmp_path, text, low, expected):
    (tmp_path / 'n').write_text(text)
    assert sysfs.read_int(str(tmp_path / 'n'), low, 100) == expected


@pytest.mark.parametrize('text', ['-1\n', '101\n', '1.5\n', 'one\n', ''])
def test_read_int_refuses_out_of_range_or_garbage(tmp_path, text):
    (tmp_path / 'n').write_text(text)
    with pytest.raises(exception.HostDataError):
        sysfs.read_int(str(tmp_path / 'n'), 0, 100)


def test_numbered_sorts_by_number_and_ignores_others():
    entries = ['region10', 'region9', 'regionX', 'dfl-fme.0', 'region0']
    assert sysfs.numbered(entries, 'region') == ['region0', 'region9',
                                                  'region10']


def test_pci_device_dir_follows_symlinks(tmp_path):
    pf = tmp_path / 'devices/pci0000:00/0000:00:1f.0'
    real = pf / 'fpga_region/region0'
    real.mkdir(parents=True)
    link = tmp_path / 'region0'
    link.symlink_to(real)
    assert sysfs.pci_device_dir(str(link)) == str(pf)
    assert sysfs.pci_device_dir(str(tmp_path)) is None


def test_pci_attach_info_refuses_non_addresses():
    assert sysfs.pci_attach_info('0000:5e:00.1') == {
        'domain': '0000', 'bus': '5e', 'device': '00', 'function': '1'}
    with pytest.raises(exception.HostDataError):
        sysfs.pci_attach_info('5e:00.1')


@pytest.mark.parametrize('reader,text', [
    (sysfs.read_hex_id, 'd8424dc4a4a3c413f89e433683f9040b\n\n'),
    (sysfs.read_hex_int, '0x8086\n\n'),
    (sysfs.read_int, '1\n\n')])
def test_a_value_is_matched_whole_not_up_to_a_newline(tmp_path, reader,
                                                      text):
    # read_text drops the one newline the kernel writes; a second one is
    # not what the kernel writes, so the value is garbage.
    (tmp_path / 'attr').write_text(text)
    with pytest.raises(exception.HostDataError):
        reader(str(tmp_path / 'attr'))


def test_pci_attach_info_refuses_a_trailing_newline():
    with pytest.raises(exception.HostDataError):
        sysfs.pci_attach_info('0000:5e:00.1\n')

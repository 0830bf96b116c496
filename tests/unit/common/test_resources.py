"""Counting accelerators in a device profile group."""
import pytest

from cyborg_lite.common import resources


@pytest.mark.parametrize('group, count', [
    ({'resources:FPGA': '1'}, 1),
    ({'resources:FPGA': '2', 'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB':
      '4096'}, 2),
    ({'resources:PGPU': '1', 'resources:VGPU': '2'}, 3),
    ({'resources:CUSTOM_QAT': '3', 'trait:CUSTOM_X': 'required',
      'accel:function_id': 'abc'}, 3),
    ({'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': '4096'}, 0),
])
def test_sizes_qualify_an_accelerator_and_are_not_counted(group, count):
    assert resources.accelerator_count(group) == count


@pytest.mark.parametrize('rc', ['MEMORY_MB', 'DISK_GB', 'CUSTOM_HBM_GIB',
                                'CUSTOM_SRAM_BYTES'])
def test_size_classes(rc):
    assert resources.is_size_class(rc)


@pytest.mark.parametrize('rc', ['FPGA', 'PGPU', 'CUSTOM_QAT',
                                'CUSTOM_GB_NIC'])
def test_accelerator_classes(rc):
    assert not resources.is_size_class(rc)

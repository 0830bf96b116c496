"""GBS and xclbin images for tests, from the product's own writers
(cyborg_lite.bitstreams.formats gbs.build / xclbin.build), with the
defaults the tests share. test_formats.py checks those writers against
the layouts written out from OPAE's packager and XRT's xclbin.h, so a
writer bug is not mirrored unnoticed by the parser tests."""
import json
import uuid

from cyborg_lite.bitstreams.formats import gbs
from cyborg_lite.bitstreams.formats import xclbin

# The fake driver's default region type ([fake_driver] region_types).
INTERFACE_UUID = '9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e'
AFU_UUID = 'd8424dc4-a4a3-c413-f89e-433683f9040b'
XCLBIN_UUID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'
VBNV = 'xilinx_u250_gen3x16_xdma_shell_4_1'
PAYLOAD = bytes(range(256)) * 4
ip_layout = xclbin.ip_layout


def hex32(value):
    return uuid.UUID(value).hex


def gbs_metadata(interface_uuid=INTERFACE_UUID, afu_uuid=AFU_UUID,
                 name='nlb_400', version=1, magic_no=gbs.AFU_MAGIC_NO):
    metadata = gbs.afu_metadata(interface_uuid, afu_uuid, name,
                                platform='DCP', version=version)
    metadata['afu-image']['magic-no'] = magic_no
    return metadata


def build_gbs(metadata=None, payload=PAYLOAD, raw_metadata=None,
              metadata_len=None, magic=gbs.MAGIC):
    if raw_metadata is None:
        raw_metadata = json.dumps(metadata or gbs_metadata()).encode()
    return gbs.pack(raw_metadata, payload, magic=magic,
                    metadata_len=metadata_len)


def build_xclbin(interface_uuid=INTERFACE_UUID, xclbin_uuid=XCLBIN_UUID,
                 vbnv=VBNV, sections=None, num_sections=None, length=None,
                 magic=xclbin.MAGIC, section_overrides=None):
    if sections is None:
        sections = [(xclbin.KIND_BITSTREAM, 'bit', PAYLOAD),
                    (xclbin.KIND_IP_LAYOUT, 'ip',
                     ip_layout([(0, 'mb'), (xclbin.IP_KERNEL,
                                            'vadd:vadd_1')]))]
    return xclbin.build(interface_uuid, xclbin_uuid, vbnv, sections,
                        magic=magic, length=length, num_sections=num_sections,
                        section_overrides=section_overrides)

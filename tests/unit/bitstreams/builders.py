"""Byte-by-byte builders of GBS and xclbin files, for tests.

They do not import the parsers: the layouts are written out again here
from the OPAE packager and XRT's xclbin.h, so a parser bug is not mirrored
by its own test data.
"""
import json
import struct
import uuid

INTERFACE_UUID = '9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e'
AFU_UUID = 'd8424dc4-a4a3-c413-f89e-433683f9040b'
XCLBIN_UUID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'
VBNV = 'xilinx_u250_gen3x16_xdma_shell_4_1'
PAYLOAD = bytes(range(256)) * 4

# OPAE packager constants.py: METADATA_GUID = b'XeonFPGA\xb7GBSv001'
GBS_MAGIC = bytes([0x58, 0x65, 0x6f, 0x6e, 0x46, 0x50, 0x47, 0x41,
                   0xb7, 0x47, 0x42, 0x53, 0x76, 0x30, 0x30, 0x31])


def hex32(value):
    return uuid.UUID(value).hex


def gbs_metadata(interface_uuid=INTERFACE_UUID, afu_uuid=AFU_UUID,
                 name='nlb_400', version=1, magic_no=488605312):
    return {
        'version': version, 'platform-name': 'DCP',
        'afu-image': {
            'magic-no': magic_no, 'interface-uuid': interface_uuid,
            'clock-frequency-high': 312, 'clock-frequency-low': 156,
            'power': 0,
            'accelerator-clusters': [{
                'name': name, 'total-contexts': 1,
                'accelerator-type-uuid': afu_uuid}]}}


def build_gbs(metadata=None, payload=PAYLOAD, raw_metadata=None,
              metadata_len=None, magic=GBS_MAGIC):
    """GUID, uint32 LE metadata length, JSON metadata, raw PR bitstream."""
    if raw_metadata is None:
        raw_metadata = json.dumps(metadata or gbs_metadata()).encode()
    if metadata_len is None:
        metadata_len = len(raw_metadata)
    return magic + struct.pack('<I', metadata_len) + raw_metadata + payload


def ip_layout(kernels):
    """int32 count, 4 bytes padding, ip_data[80] {u32 type, u32 props,
    u64 base, char name[64]}; type 1 = IP_KERNEL."""
    body = struct.pack('<i4x', len(kernels))
    for index, (ip_type, name) in enumerate(kernels):
        body += struct.pack('<IIQ64s', ip_type, 0, 0x1000 * index,
                            name.encode())
    return body


def _axlf_header(length, interface, vbnv, xclbin_uuid, count):
    return struct.pack(
        '<QQQHBBHH16s64s16s16sI4x', length, 1700000000, 0, 0, 2, 1,
        1, 0, interface, vbnv if isinstance(vbnv, bytes) else vbnv.encode(),
        xclbin_uuid, b'', count)


def build_xclbin(interface_uuid=INTERFACE_UUID, xclbin_uuid=XCLBIN_UUID,
                 vbnv=VBNV, sections=None, num_sections=None, length=None,
                 magic=b'xclbin2\x00', section_overrides=None):
    """struct axlf: magic, signature length, reserved, key block, unique
    id, axlf_header (152 B), section headers (40 B), section data."""
    if sections is None:
        sections = [(0, 'bit', PAYLOAD),
                    (8, 'ip', ip_layout([(0, 'mb'),
                                         (1, 'vadd:vadd_1')]))]
    count = len(sections) if num_sections is None else num_sections
    data_at = 456 + 40 * len(sections)
    table, blob = b'', b''
    for index, (kind, name, data) in enumerate(sections):
        offset, size = data_at + len(blob), len(data)
        if section_overrides and index in section_overrides:
            offset, size = section_overrides[index]
        table += struct.pack('<I16s4xQQ', kind, name.encode(), offset, size)
        blob += data
    total = data_at + len(blob)
    interface = (uuid.UUID(interface_uuid).bytes if interface_uuid
                 else bytes(16))
    head = (magic + struct.pack('<i', -1) + b'\xff' * 28 + bytes(256) +
            struct.pack('<Q', 42) +
            _axlf_header(total if length is None else length, interface,
                         vbnv, uuid.UUID(xclbin_uuid).bytes, count))
    assert len(head) == 456
    return head + table + blob

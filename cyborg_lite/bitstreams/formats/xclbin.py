"""Xilinx xclbin (``struct axlf``, "xclbin2"): header parser.

Layout verified against Xilinx/XRT src/runtime_src/core/include/xclbin.h
(little-endian)::

    0    char m_magic[8] = "xclbin2\\0"
    8    int32 m_signature_length, 12 reserved[28], 40 m_keyBlock[256]
    296  uint64 m_uniqueId
    304  struct axlf_header (152 bytes):
         +0 u64 m_length (total size of the xclbin), +8 m_timeStamp,
         +16 m_featureRomTimeStamp, +24 u16 patch, u8 major, u8 minor,
         +28 u16 m_mode, +30 u16 m_actionMask, +32 m_interface_uuid[16],
         +48 m_platformVBNV[64] (NUL-terminated), +112 uuid[16] (the
         xclbin's own uuid), +128 m_debug_bin[16], +144 u32 m_numSections
    456  struct axlf_section_header[m_numSections], 40 bytes each:
         u32 kind, char name[16], 4 bytes padding, u64 offset, u64 size

XRT loads the whole axlf (m_length bytes), so that is the payload; the
region type is m_interface_uuid and the function id the xclbin uuid, which
is what XRT reports as loaded. XCLBIN_MAX_NUM_SECTION is 0x10000.

Discrepancy with research/drivers/xclbin.md: ``ip_layout`` and
``mem_topology`` start with an int32 count but their arrays hold uint64
fields, so the array begins at offset 8 (4 bytes of padding), not 4.

xclbin is Xilinx's (AMD's) format: its vendor is Xilinx's PCI vendor id,
as Alveo devices report it. ``build`` writes an xclbin with this layout,
for tools and tests (``cyborg-lite bitstream sample``).
"""
import struct
import uuid

from cyborg_lite.bitstreams.formats import labels
from cyborg_lite.common import exception

MAGIC = b'xclbin2\x00'
VENDOR = '0x10ee'
FIXED_LEN = 456
_HEADER_AT = 304
_HEADER = struct.Struct('<QQQHBBHH16s64s16s16sI')
_SECTION = struct.Struct('<I16s4xQQ')
MAX_SECTIONS = 0x10000
KIND_BITSTREAM = 0
KIND_IP_LAYOUT = 8
IP_KERNEL = 1
_IP_DATA = struct.Struct('<IIQ64s')
_IP_ARRAY_AT = 8
# ip_layout entries read for a kernel name; a bigger count is corrupt.
MAX_IPS = 4096


def _fail(reason):
    raise exception.InvalidBitstream(format='xclbin', reason=reason)


def _cstring(raw, field):
    text = raw.split(b'\x00', 1)[0]
    try:
        return labels.check(text.decode('utf-8'), field, _fail)
    except UnicodeDecodeError:
        _fail('%s is not UTF-8 text' % field)


def _read_fixed(f, size):
    head = f.read(FIXED_LEN)
    if head[:len(MAGIC)] != MAGIC:
        _fail('wrong magic %r, expected %r' % (head[:8], MAGIC))
    if size < FIXED_LEN:
        _fail('truncated: %d bytes, the header alone needs %d'
              % (size, FIXED_LEN))
    return _HEADER.unpack_from(head, _HEADER_AT)


def _check_lengths(length, count, size):
    if count > MAX_SECTIONS:
        _fail('%d sections is more than the %d allowed'
              % (count, MAX_SECTIONS))
    table_end = FIXED_LEN + count * _SECTION.size
    if length < table_end:
        _fail('m_length %d is shorter than the header and its %d section '
              'headers (%d bytes)' % (length, count, table_end))
    if length > size:
        _fail('truncated: m_length says %d bytes, the file has %d'
              % (length, size))


def _read_sections(f, count, length):
    raw = f.read(count * _SECTION.size)
    sections = []
    for index in range(count):
        kind, name, offset, sec_size = _SECTION.unpack_from(
            raw, index * _SECTION.size)
        if offset + sec_size > length:
            _fail('section %d (kind %d) runs past m_length %d'
                  % (index, kind, length))
        sections.append({'kind': kind, 'name': _cstring(name, 'section name'),
                         'offset': offset, 'size': sec_size})
    return sections


def _kernel_name(f, sections):
    """Name of the first kernel in IP_LAYOUT, or None."""
    layout = next((s for s in sections if s['kind'] == KIND_IP_LAYOUT), None)
    if layout is None or layout['size'] < _IP_ARRAY_AT:
        return None
    f.seek(layout['offset'])
    (count,) = struct.unpack('<i', f.read(4))
    if not 0 <= count <= MAX_IPS or \
            _IP_ARRAY_AT + count * _IP_DATA.size > layout['size']:
        _fail('IP_LAYOUT count %d does not fit its %d-byte section'
              % (count, layout['size']))
    f.seek(layout['offset'] + _IP_ARRAY_AT)
    raw = f.read(count * _IP_DATA.size)
    for index in range(count):
        ip_type, _props, _base, name = _IP_DATA.unpack_from(
            raw, index * _IP_DATA.size)
        if ip_type == IP_KERNEL:
            # Kernel instances are named "kernel:instance".
            return _cstring(name, 'IP_LAYOUT name').split(':', 1)[0] or None
    return None


def parse(f, size):
    """Header fields of the xclbin file ``f`` (seekable, at offset 0)."""
    (length, _ts, _rom_ts, _patch, major, minor, mode, _mask, interface,
     vbnv, xclbin_uuid, _debug, count) = _read_fixed(f, size)
    _check_lengths(length, count, size)
    sections = _read_sections(f, count, length)
    # Flat (non-PR) shells leave the interface uuid zero: no region type.
    region_type = interface.hex() if any(interface) else None
    if not any(xclbin_uuid):
        _fail('the xclbin uuid is all zero')
    return {
        'region_type': region_type,
        'function_id': xclbin_uuid.hex(),
        'function_name': _kernel_name(f, sections),
        'platform': _cstring(vbnv, 'm_platformVBNV') or None,
        'payload_offset': 0,
        'payload_length': length,
        'vendor': VENDOR,
        'extra': {'mode': mode, 'version': '%d.%d' % (major, minor),
                  'sections': sections},
    }


# --- writing ------------------------------------------------------------------

_PREAMBLE = struct.Struct('<8si28s256sQ')  # magic .. m_uniqueId
SIGNATURE_NONE = -1


def ip_layout(kernels):
    """An IP_LAYOUT section: int32 count, 4 bytes padding, then
    ``(ip_type, name)`` entries (IP_KERNEL names are "kernel:instance")."""
    body = struct.pack('<i4x', len(kernels))
    for index, (ip_type, name) in enumerate(kernels):
        body += _IP_DATA.pack(ip_type, 0, 0x1000 * index, name.encode())
    return body


def _uuid_bytes(value):
    return uuid.UUID(value).bytes if value else bytes(16)


def build(interface_uuid, xclbin_uuid, vbnv, sections, magic=MAGIC,
          length=None, num_sections=None, section_overrides=None):
    """The bytes of an xclbin: the fixed header, one section header per
    ``(kind, name, data)`` of ``sections`` and their data after it. An
    empty ``interface_uuid`` writes zeros (a flat shell). ``length``,
    ``num_sections`` and ``section_overrides`` ({index: (offset, size)})
    replace the true values: it writes what it is given, so a caller may
    build a malformed file on purpose (tests)."""
    count = len(sections) if num_sections is None else num_sections
    data_at = FIXED_LEN + _SECTION.size * len(sections)
    table, blob = b'', b''
    for index, (kind, name, data) in enumerate(sections):
        offset, size = data_at + len(blob), len(data)
        if section_overrides and index in section_overrides:
            offset, size = section_overrides[index]
        table += _SECTION.pack(kind, name.encode(), offset, size)
        blob += data
    total = data_at + len(blob)
    head = _PREAMBLE.pack(magic, SIGNATURE_NONE, b'\xff' * 28, bytes(256),
                          42)
    head += _HEADER.pack(
        total if length is None else length, 1700000000, 0, 0, 2, 1, 1, 0,
        _uuid_bytes(interface_uuid),
        vbnv if isinstance(vbnv, bytes) else vbnv.encode(),
        _uuid_bytes(xclbin_uuid), b'', count) + bytes(4)
    return head + table + blob

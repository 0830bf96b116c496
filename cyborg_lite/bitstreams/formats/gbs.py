"""Intel OPAE green bitstream (.gbs): header parser.

Layout, verified against the OPAE SDK (OFS/opae-sdk
python/packager/packager/metadata/constants.py and metadata.py, which
write it, and libraries' bitstream.c / metadatav1.c, which read it)::

    [0:16)   GUID magic, the bytes b'XeonFPGA\\xb7GBSv001' (that is the
             UUID 58656f6e-4650-4741-b747-425376303031 in big-endian
             byte order, as research/drivers/gbs.md said)
    [16:20)  uint32 little-endian: length of the JSON metadata
    [20:20+len)  JSON metadata (json.dumps output, so ASCII/UTF-8)
    rest     the raw PR bitstream, what DFL_FPGA_FME_PORT_PR is given

JSON (metadata "version" 1; OPAE also takes 640 and 650, which some BBS
6.4/6.5-era tools wrote by mistake - a detail the research notes lacked)::

    {"version": 1, "platform-name": "...",
     "afu-image": {"magic-no": 488605312, "interface-uuid": "...",
                   "accelerator-clusters": [
                       {"name": "...", "accelerator-type-uuid": "..."}]}}

``magic-no`` must be 488605312 (0x1d1f8680), as OPAE's metadatav1.c
checks. The DFL port exposes one afu_id, so the first accelerator cluster
is the function the image loads.

The metadata names no vendor (OPAE's schema has interface, clocks, power
and clusters): GBS is Intel's format, so its vendor is Intel's PCI
vendor id, as devices report theirs. ``build`` writes a GBS with the same
layout, for tools and tests (``cyborg-lite bitstream sample``).
"""
import json
import struct
import uuid

from cyborg_lite.bitstreams.formats import labels
from cyborg_lite.common import exception

MAGIC = b'XeonFPGA\xb7GBSv001'
_LEN = struct.Struct('<I')
HEADER_LEN = len(MAGIC) + _LEN.size
AFU_MAGIC_NO = 0x1d1f8680
METADATA_VERSIONS = (1, 640, 650)
VENDOR = '0x8086'
# Real metadata is a few hundred bytes; a bigger length is a corrupt or
# hostile file, and refusing it bounds the memory a parse may take.
MAX_METADATA_LEN = 1024 * 1024
# Real metadata nests 4 levels (metadata, afu-image, clusters, cluster);
# deeper is hostile (100,000 levels overflowed the JSON decoder's stack).
MAX_DEPTH = 32


def _fail(reason):
    raise exception.InvalidBitstream(format='GBS', reason=reason)


def _read_header(f, size):
    if size < HEADER_LEN:
        _fail('truncated: %d bytes, the header alone needs %d'
              % (size, HEADER_LEN))
    head = f.read(HEADER_LEN)
    if head[:len(MAGIC)] != MAGIC:
        _fail('wrong magic %s, expected %s' % (head[:16].hex(), MAGIC.hex()))
    (length,) = _LEN.unpack_from(head, len(MAGIC))
    if length == 0:
        _fail('no metadata (length 0): its interface-uuid is needed to '
              'check the region type')
    if length > MAX_METADATA_LEN:
        _fail('metadata length %d is larger than the %d bytes allowed'
              % (length, MAX_METADATA_LEN))
    if HEADER_LEN + length > size:
        _fail('metadata length %d runs past the end of the %d-byte file'
              % (length, size))
    if HEADER_LEN + length == size:
        _fail('no PR bitstream after the metadata')
    return length


def _depth(data):
    """Nesting depth of decoded JSON, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _decode_json(raw):
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        _fail('metadata is not UTF-8 (byte %d)' % exc.start)
    try:
        data = json.loads(text)
    except RecursionError:
        _fail('metadata nests deeper than %d levels' % MAX_DEPTH)
    except ValueError as exc:
        _fail('metadata is not JSON: %s' % exc)
    if _depth(data) > MAX_DEPTH:
        _fail('metadata nests deeper than %d levels' % MAX_DEPTH)
    if not isinstance(data, dict):
        _fail('metadata must be a JSON object')
    return data


def _get(obj, key, kind, where):
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        _fail('metadata %s"%s" must be %s, got %r'
              % (where, key, kind.__name__, value))
    return value


def _uuid_hex(obj, key, where):
    value = _get(obj, key, str, where)
    try:
        return uuid.UUID(value).hex
    except ValueError:
        _fail('metadata %s"%s" is not a UUID: %r'
              % (where, key, value[:80]))


def _label(value, field):
    return labels.check(value, 'metadata ' + field, _fail)


def _afu_fields(data):
    version = _get(data, 'version', int, '')
    if version not in METADATA_VERSIONS:
        _fail('unsupported metadata version %d' % version)
    image = _get(data, 'afu-image', dict, '')
    where = 'afu-image.'
    magic_no = _get(image, 'magic-no', int, where)
    if magic_no != AFU_MAGIC_NO:
        _fail('afu-image.magic-no is %d, expected %d'
              % (magic_no, AFU_MAGIC_NO))
    clusters = _get(image, 'accelerator-clusters', list, where)
    if not clusters or not isinstance(clusters[0], dict):
        _fail('afu-image.accelerator-clusters must list at least one object')
    first = clusters[0]
    cluster = where + 'accelerator-clusters[0].'
    platform = data.get('platform-name')
    return {
        'region_type': _uuid_hex(image, 'interface-uuid', where),
        'function_id': _uuid_hex(first, 'accelerator-type-uuid', cluster),
        'function_name': _label(_get(first, 'name', str, cluster),
                                cluster + '"name"'),
        'platform': (_label(platform, '"platform-name"')
                     if isinstance(platform, str) else None),
    }


def parse(f, size):
    """Header fields of the GBS file ``f`` (seekable, at offset 0)."""
    length = _read_header(f, size)
    data = _decode_json(f.read(length))
    fields = _afu_fields(data)
    fields.update(payload_offset=HEADER_LEN + length,
                  payload_length=size - HEADER_LEN - length,
                  vendor=VENDOR, extra={'metadata': data})
    return fields


# --- writing ------------------------------------------------------------------

def afu_metadata(interface_uuid, accelerator_uuid, name,
                 platform='cyborg_lite', version=1):
    """The JSON metadata of an image, in the shape OPAE's packager writes
    (one accelerator cluster; user clocks as numbers, which the packager
    requires in a GBS)."""
    return {
        'version': version, 'platform-name': platform,
        'afu-image': {
            'magic-no': AFU_MAGIC_NO,
            'interface-uuid': str(uuid.UUID(interface_uuid)),
            'clock-frequency-high': 312, 'clock-frequency-low': 156,
            'power': 0,
            'accelerator-clusters': [{
                'name': name, 'total-contexts': 1,
                'accelerator-type-uuid': str(uuid.UUID(accelerator_uuid))}]}}


def pack(raw_metadata, payload, magic=MAGIC, metadata_len=None):
    """The bytes of a GBS: magic, metadata length (``metadata_len`` if
    given, else the true one), metadata, PR bitstream. It writes what it is
    given: a caller may build a malformed file on purpose (tests)."""
    if metadata_len is None:
        metadata_len = len(raw_metadata)
    return magic + _LEN.pack(metadata_len) + raw_metadata + payload


def build(metadata, payload):
    """A GBS of ``metadata`` (a dict, see afu_metadata) and ``payload``."""
    return pack(json.dumps(metadata).encode('utf-8'), payload)

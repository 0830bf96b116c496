"""Header parsers on files built byte by byte, and every refusal."""
import io
import json
import struct

import pytest

from cyborg_lite.bitstreams import formats
from cyborg_lite.bitstreams.formats import gbs
from cyborg_lite.common import exception
from tests.unit.bitstreams import builders as b


def _parse(data):
    return formats.parse(io.BytesIO(data))


def _refused(data, match):
    with pytest.raises(exception.InvalidBitstream, match=match):
        _parse(data)


# --- GBS -------------------------------------------------------------------

def test_gbs_header_fields():
    data = b.build_gbs()
    header = _parse(data)
    assert header.format == 'gbs'
    assert header.region_type == b.hex32(b.INTERFACE_UUID)
    assert header.function_id == b.hex32(b.AFU_UUID)
    assert header.function_name == 'nlb_400'
    assert header.platform == 'DCP'
    assert data[header.payload_offset:][:header.payload_length] == b.PAYLOAD
    assert header.payload_offset + header.payload_length == len(data)


def test_gbs_from_path_and_strip_header(tmp_path):
    path = tmp_path / 'x.gbs'
    path.write_bytes(b.build_gbs())
    assert formats.parse(str(path)).format == 'gbs'
    assert formats.strip_header(str(path)) == b.PAYLOAD
    assert b''.join(formats.iter_payload(str(path), chunk_size=100)) == \
        b.PAYLOAD


@pytest.mark.parametrize('version', [640, 650])
def test_gbs_accepts_opae_version_aliases(version):
    data = b.build_gbs(b.gbs_metadata(version=version))
    assert _parse(data).function_id == b.hex32(b.AFU_UUID)


@pytest.mark.parametrize('cut', [16, 19])
def test_gbs_truncated_header(cut):
    _refused(b.build_gbs()[:cut], 'GBS file: truncated: %d bytes' % cut)


def test_gbs_shorter_than_its_magic_is_raw():
    # Too short to be recognised: a headerless image, which cross_check
    # then refuses if the user declared it a GBS.
    assert _parse(b.build_gbs()[:10]).format == 'raw'


def test_gbs_wrong_magic_is_not_gbs():
    data = b.build_gbs(magic=b'XeonFPGA\xb7GBSv002')
    assert _parse(data).format == 'raw'


def test_gbs_metadata_beyond_eof():
    data = b.build_gbs(metadata_len=10 ** 6)
    _refused(data, 'metadata length 1000000 runs past the end')


def test_gbs_absurd_metadata_length():
    _refused(b.build_gbs(metadata_len=0xFFFFFFFF),
             'metadata length 4294967295 is larger than')


def test_gbs_without_metadata():
    _refused(b.build_gbs(raw_metadata=b''), r'no metadata \(length 0\)')


def test_gbs_without_payload():
    _refused(b.build_gbs(payload=b''), 'no PR bitstream after the metadata')


def test_gbs_non_utf8_metadata():
    _refused(b.build_gbs(raw_metadata=b'{"a": "\xff"}'),
             r'metadata is not UTF-8 \(byte 7\)')


def test_gbs_non_json_metadata():
    _refused(b.build_gbs(raw_metadata=b'{"version": 1,'),
             'metadata is not JSON')


def test_gbs_metadata_not_an_object():
    _refused(b.build_gbs(raw_metadata=b'[1, 2]'), 'must be a JSON object')


@pytest.mark.parametrize('mutate,match', [
    (lambda m: m.pop('version'), 'metadata "version" must be int'),
    (lambda m: m.update(version=2), 'unsupported metadata version 2'),
    (lambda m: m.update({'afu-image': []}), '"afu-image" must be dict'),
    (lambda m: m['afu-image'].update({'magic-no': 1}),
     'magic-no is 1, expected 488605312'),
    (lambda m: m['afu-image'].update({'interface-uuid': 'nope'}),
     'afu-image."interface-uuid" is not a UUID'),
    (lambda m: m['afu-image'].pop('interface-uuid'),
     'afu-image."interface-uuid" must be str'),
    (lambda m: m['afu-image'].update({'accelerator-clusters': []}),
     'must list at least one object'),
    (lambda m: m['afu-image']['accelerator-clusters'][0].update(
        {'accelerator-type-uuid': 12}),
     r'accelerator-clusters\[0\]."accelerator-type-uuid" must be str'),
])
def test_gbs_bad_metadata_content(mutate, match):
    metadata = b.gbs_metadata()
    mutate(metadata)
    _refused(b.build_gbs(metadata), match)


def _nested(depth):
    return '[' * depth + ']' * depth


@pytest.mark.parametrize('depth', [100000, 1000, gbs.MAX_DEPTH])
def test_gbs_deeply_nested_metadata(depth):
    # 100,000 levels overflowed the JSON decoder's stack: a 500 before.
    raw = ('{"version": 1, "x": %s}' % _nested(depth)).encode()
    _refused(b.build_gbs(raw_metadata=raw),
             'metadata nests deeper than %d levels' % gbs.MAX_DEPTH)


def test_gbs_nesting_within_the_limit_is_read():
    metadata = b.gbs_metadata()
    metadata['deep'] = json.loads(_nested(gbs.MAX_DEPTH - 1))
    assert _parse(b.build_gbs(metadata)).function_name == 'nlb_400'


@pytest.mark.parametrize('name, match', [
    ('nlb\x00400', r'"name" holds a control character \(U\+0000 at '
                   r'character 3\)'),
    ('nlb\n400', r'a control character \(U\+000A'),
    ('nlb\x1b[31m', r'a control character \(U\+001B'),
    ('nlb\x85', r'a control character \(U\+0085'),
    ('nlb\ud800', r'a lone surrogate \(U\+D800'),
    ('n' * 256, '"name" is 256 characters long, more than the 255'),
])
def test_gbs_function_name_that_cannot_be_stored(name, match):
    metadata = b.gbs_metadata(name=name)
    _refused(b.build_gbs(metadata), match)


def test_gbs_platform_name_with_a_nul():
    metadata = b.gbs_metadata()
    metadata['platform-name'] = 'D\x00CP'
    _refused(b.build_gbs(metadata), '"platform-name" holds a control')


def test_gbs_unicode_names_are_kept():
    header = _parse(b.build_gbs(b.gbs_metadata(name='nlb — 加速')))
    assert header.function_name == 'nlb — 加速'


# --- xclbin ----------------------------------------------------------------

def test_xclbin_header_fields():
    data = b.build_xclbin()
    header = _parse(data)
    assert header.format == 'xclbin'
    assert header.region_type == b.hex32(b.INTERFACE_UUID)
    assert header.function_id == b.hex32(b.XCLBIN_UUID)
    assert header.function_name == 'vadd'
    assert header.platform == b.VBNV
    assert (header.payload_offset, header.payload_length) == (0, len(data))
    kinds = [s['kind'] for s in header.extra['sections']]
    assert kinds == [0, 8]
    bit = header.extra['sections'][0]
    assert data[bit['offset']:bit['offset'] + bit['size']] == b.PAYLOAD


def test_xclbin_flat_shell_has_no_region_type():
    header = _parse(b.build_xclbin(interface_uuid=None, sections=[]))
    assert header.region_type is None
    assert header.function_name is None


def test_xclbin_truncated_fixed_header():
    _refused(b.build_xclbin()[:300], 'truncated: 300 bytes')


def test_xclbin_truncated_body():
    data = b.build_xclbin()
    _refused(data[:-1], 'truncated: m_length says %d bytes, the file has %d'
             % (len(data), len(data) - 1))


def test_xclbin_wrong_magic_is_not_xclbin():
    assert _parse(b.build_xclbin(magic=b'xclbin1\x00')).format == 'raw'


def test_xclbin_absurd_section_count():
    _refused(b.build_xclbin(num_sections=0x10001),
             '65537 sections is more than the 65536 allowed')


def test_xclbin_section_table_beyond_length():
    _refused(b.build_xclbin(num_sections=1000),
             'shorter than the header and its 1000 section headers')


def test_xclbin_section_beyond_length():
    _refused(b.build_xclbin(section_overrides={0: (456, 10 ** 9)}),
             r'section 0 \(kind 0\) runs past m_length')


def test_xclbin_bad_ip_layout_count():
    bad = struct.pack('<i4x', 1000)
    _refused(b.build_xclbin(sections=[(8, 'ip', bad)]),
             'IP_LAYOUT count 1000 does not fit its 8-byte section')


def test_xclbin_non_utf8_vbnv():
    _refused(b.build_xclbin(vbnv=b'\xff\xfe'), 'm_platformVBNV is not UTF-8')


@pytest.mark.parametrize('kernel', ['va\x01dd:vadd_1', 'vadd\t:1'])
def test_xclbin_kernel_name_with_control_characters(kernel):
    sections = [(8, 'ip', b.ip_layout([(1, kernel)]))]
    _refused(b.build_xclbin(sections=sections),
             'IP_LAYOUT name holds a control character')


def test_xclbin_vbnv_with_a_newline():
    _refused(b.build_xclbin(vbnv='shell\nX'),
             r'm_platformVBNV holds a control character \(U\+000A')


def test_xclbin_zero_uuid():
    _refused(b.build_xclbin(xclbin_uuid='00000000-0000-0000-0000-'
                            '000000000000'), 'xclbin uuid is all zero')


# --- raw and detection -----------------------------------------------------

def test_raw_image_is_all_payload():
    header = _parse(b'\x00\x01\x02')
    assert (header.format, header.payload_offset, header.payload_length) == \
        ('raw', 0, 3)
    assert header.region_type is None


def test_empty_file_refused():
    _refused(b'', 'the file is empty')


# --- cross-check -----------------------------------------------------------

def test_cross_check_fills_missing_metadata():
    header = _parse(b.build_gbs())
    filled = formats.cross_check(header, {'name': 'n'})
    assert filled == {'name': 'n', 'format': 'gbs',
                      'region_type': b.hex32(b.INTERFACE_UUID),
                      'function_id': b.hex32(b.AFU_UUID),
                      'function_name': 'nlb_400', 'vendor': '0x8086'}


@pytest.mark.parametrize('data, vendor', [
    (b.build_gbs(), '0x8086'), (b.build_xclbin(), '0x10ee'),
    (b'plain bytes', None)])
def test_the_format_names_the_vendor(data, vendor):
    header = _parse(data)
    assert header.vendor == vendor
    assert formats.cross_check(header, {})['vendor'] == vendor


def test_a_declared_vendor_is_kept():
    header = _parse(b.build_gbs())
    assert formats.cross_check(header, {'vendor': 'acme'})['vendor'] == \
        'acme'


def test_cross_check_accepts_dashed_uppercase_ids():
    header = _parse(b.build_gbs())
    filled = formats.cross_check(header, {
        'format': 'gbs', 'region_type': b.INTERFACE_UUID.upper(),
        'function_id': b.AFU_UUID, 'function_name': 'my name'})
    assert filled['region_type'] == b.hex32(b.INTERFACE_UUID)
    assert filled['function_name'] == 'my name'


@pytest.mark.parametrize('field,value', [
    ('region_type', '00000000-0000-0000-0000-000000000001'),
    ('function_id', 'ffffffffffffffffffffffffffffffff'),
    ('format', 'xclbin'),
    ('format', 'raw'),
    ('format', 'rbf'),
])
def test_cross_check_refuses_contradiction_naming_field(field, value):
    header = _parse(b.build_gbs())
    with pytest.raises(exception.BitstreamHeaderMismatch) as info:
        formats.cross_check(header, {field: value})
    assert 'declared %s' % field in str(info.value)
    assert isinstance(info.value, exception.Invalid)


def test_cross_check_headerless_declared_gbs():
    header = _parse(b'plain bytes')
    with pytest.raises(exception.BitstreamHeaderMismatch,
                       match="declared format: the header says 'raw'"):
        formats.cross_check(header, {'format': 'gbs'})
    assert formats.cross_check(header, {'format': 'rbf'})['format'] == 'rbf'


def test_cross_check_unknown_format():
    with pytest.raises(exception.Invalid, match='format must be one of'):
        formats.cross_check(_parse(b'x'), {'format': 'zip'})


def test_normalise_id():
    assert formats.normalise_id(b.AFU_UUID.upper()) == b.hex32(b.AFU_UUID)
    assert formats.normalise_id('Fake-Region') == 'fake-region'
    assert formats.normalise_id(None) is None
    with pytest.raises(exception.Invalid, match='region_type must be'):
        formats.normalise_id('', 'region_type')


def test_builder_matches_opae_packager_layout():
    # What the OPAE packager's metadata.get_metadata writes: GUID bytes,
    # struct '<I' length, json.dumps(afu_json).
    metadata = b.gbs_metadata()
    text = json.dumps(metadata).encode()
    assert b.build_gbs(metadata, payload=b'R') == (
        b'XeonFPGA\xb7GBSv001' + struct.pack('<I', len(text)) + text + b'R')


def test_xclbin_payload_is_the_whole_axlf(tmp_path):
    # XRT loads the whole xclbin, so nothing is stripped.
    path = tmp_path / 'k.xclbin'
    data = b.build_xclbin()
    path.write_bytes(data)
    assert formats.payload_range(str(path)) == (0, len(data))
    assert formats.strip_header(str(path)) == data


def test_xclbin_writer_matches_xrt_layout():
    # Offsets from XRT's xclbin.h: struct axlf's header at 304, m_length
    # first, m_interface_uuid at +32, m_platformVBNV at +48, uuid at +112,
    # m_numSections at +144, the section headers at 456, 40 bytes each:
    # u32 kind, char name[16], 4 bytes padding, u64 offset, u64 size.
    data = b.build_xclbin()
    assert data[:8] == b'xclbin2\x00'
    assert struct.unpack_from('<Q', data, 304)[0] == len(data)
    assert data[336:352] == bytes.fromhex(b.hex32(b.INTERFACE_UUID))
    assert data[352:352 + len(b.VBNV)] == b.VBNV.encode()
    assert data[416:432] == bytes.fromhex(b.hex32(b.XCLBIN_UUID))
    assert struct.unpack_from('<I', data, 448)[0] == 2
    kind, name, offset, size = struct.unpack_from('<I16s4xQQ', data, 456)
    assert (kind, name.rstrip(b'\x00'), size) == (0, b'bit',
                                                  len(b.PAYLOAD))
    assert data[offset:offset + size] == b.PAYLOAD


# --- writing -----------------------------------------------------------------

@pytest.mark.parametrize('fmt', formats.WRITABLE_FORMATS)
def test_build_writes_what_parse_reads(fmt):
    data = formats.build(fmt, b.INTERFACE_UUID, b.AFU_UUID.upper(), 'nlb',
                         b'PR')
    header = _parse(data)
    assert (header.format, header.region_type, header.function_id,
            header.function_name) == (fmt, b.hex32(b.INTERFACE_UUID),
                                      b.hex32(b.AFU_UUID), 'nlb')


@pytest.mark.parametrize('args, match', [
    (('gbs', 'nope', b.AFU_UUID, 'n'), 'region_type must be a UUID'),
    (('gbs', b.INTERFACE_UUID, 'x' * 32, 'n'), 'function_id must be a UUID'),
    (('gbs', b.INTERFACE_UUID, b.AFU_UUID, ''), 'must not be empty'),
    (('gbs', b.INTERFACE_UUID, b.AFU_UUID, 'a\x00'), 'control character'),
    (('xclbin', b.INTERFACE_UUID, b.AFU_UUID, 'k' * 31), 'too long'),
    (('rbf', b.INTERFACE_UUID, b.AFU_UUID, 'n'), 'format must be one of'),
])
def test_build_refuses_what_it_cannot_write(args, match):
    with pytest.raises(exception.Invalid, match=match):
        formats.build(*args, payload=b'PR')

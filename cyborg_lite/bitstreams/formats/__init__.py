"""Bitstream file formats: detection, header parsing, cross-checks.

``parse`` reads the real header of an image (Intel OPAE GBS, Xilinx xclbin)
and returns a ``BitstreamHeader``; files with no header we know (Intel RBF,
raw images) come back as format ``raw``. ``cross_check`` compares a header
with the metadata a user declared and refuses, naming the field, a file
whose header contradicts it: the hardware may not stop a bad image, so
software must.

Whatever the bytes, ``parse`` either returns a header or raises
exception.InvalidBitstream (a 400 at the API) naming the problem: no
other exception, however deep, long or malformed the header (a fuzz test
holds it to that). Header text is refused, not cleaned, when it could
not be stored as it is (labels.py).

Identifiers (region type = PR interface id, function id = AFU /
accelerator-type id) are compared in one canonical form: lowercase hex with
no dashes, as the DFL sysfs files ``compat_id`` and ``afu_id`` show them.
"""
import contextlib
import dataclasses
import os
import re

from cyborg_lite.bitstreams.formats import gbs
from cyborg_lite.bitstreams.formats import labels
from cyborg_lite.bitstreams.formats import xclbin
from cyborg_lite.common import exception

FORMATS = ('gbs', 'xclbin', 'rbf', 'raw')
# Formats whose files carry no header we parse; their bytes go to the
# hardware as they are.
HEADERLESS_FORMATS = ('rbf', 'raw')
_PARSERS = {'gbs': gbs, 'xclbin': xclbin}
_MAGIC_LEN = max(len(gbs.MAGIC), len(xclbin.MAGIC))
_HEX32 = re.compile(r'^[0-9a-f]{32}$')


@dataclasses.dataclass(frozen=True)
class BitstreamHeader:
    """What an image's header says about it."""
    format: str
    # PR interface id the image fits, 32 lowercase hex; None if unknown.
    region_type: str | None
    # AFU / accelerator-type id the image loads, 32 lowercase hex.
    function_id: str | None
    function_name: str | None
    # Board / shell the image was built for (GBS platform-name, VBNV).
    platform: str | None
    # The bytes the hardware takes: [payload_offset, +payload_length).
    payload_offset: int
    payload_length: int
    # Whose format it is, as a PCI vendor id like devices report (GBS:
    # Intel 0x8086, xclbin: Xilinx 0x10ee); None for a headerless image.
    vendor: str | None = None
    # Format-specific facts (GBS JSON metadata, xclbin sections...).
    extra: dict = dataclasses.field(default_factory=dict, compare=False)


def normalise_id(value, field='id'):
    """A uuid-like id as 32 lowercase hex digits; None stays None.

    Region types that are not uuids (e.g. a fake driver's names) are kept,
    lowercased, so comparisons stay consistent on both sides.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise exception.Invalid(reason='%s must be a non-empty string, got '
                                '%r' % (field, value))
    text = value.strip().lower()
    compact = text.replace('-', '')
    return compact if _HEX32.match(compact) else text


def detect_format(head):
    """'gbs' or 'xclbin' from the first bytes of a file, else 'raw'."""
    for name, parser in _PARSERS.items():
        if head.startswith(parser.MAGIC):
            return name
    return 'raw'


@contextlib.contextmanager
def _opened(path_or_fileobj):
    if isinstance(path_or_fileobj, (str, os.PathLike)):
        with open(path_or_fileobj, 'rb') as f:
            yield f
    else:
        yield path_or_fileobj


def _size(f):
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    return size


def parse(path_or_fileobj):
    """The BitstreamHeader of a file (a path or a seekable binary file).

    Raises exception.InvalidBitstream naming what is wrong: truncated file,
    wrong magic, lengths beyond the end, undecodable metadata.
    """
    with _opened(path_or_fileobj) as f:
        size = _size(f)
        head = f.read(_MAGIC_LEN)
        f.seek(0)
        fmt = detect_format(head)
        if fmt == 'raw':
            if size == 0:
                raise exception.InvalidBitstream(format='raw',
                                                 reason='the file is empty')
            return BitstreamHeader('raw', None, None, None, None, 0, size)
        return BitstreamHeader(format=fmt, **_PARSERS[fmt].parse(f, size))


def _check_format(header, declared):
    if declared is None:
        return header.format
    if declared not in FORMATS:
        raise exception.Invalid(reason='format must be one of %s, got %r'
                                % (', '.join(FORMATS), declared))
    # A headerless declaration fits only a file with no known header:
    # else the GBS/xclbin header itself would be sent to the hardware.
    fits = (header.format == 'raw' if declared in HEADERLESS_FORMATS
            else header.format == declared)
    if not fits:
        raise exception.BitstreamHeaderMismatch(
            field='format', header=header.format, declared=declared)
    return declared


def _check_id(field, from_header, declared):
    declared = normalise_id(declared, field)
    if from_header is None:
        return declared
    if declared is not None and declared != from_header:
        raise exception.BitstreamHeaderMismatch(
            field=field, header=from_header, declared=declared)
    return from_header


def cross_check(header, declared):
    """Declared metadata (a dict) filled in and checked against a header.

    Returns a new dict where ``format``, ``region_type``, ``function_id``,
    ``function_name`` and ``vendor`` come from the header when the
    declaration left them out. A declared format, region type or function
    id that the header contradicts raises exception.BitstreamHeaderMismatch
    naming the field. Names are labels, not identities: a declared
    function_name or vendor is kept as given.
    """
    result = dict(declared)
    result['format'] = _check_format(header, declared.get('format'))
    for field in ('region_type', 'function_id'):
        result[field] = _check_id(field, getattr(header, field),
                                  declared.get(field))
    for label in ('function_name', 'vendor'):
        if not declared.get(label):
            result[label] = getattr(header, label)
    return result


def payload_range(path):
    """(offset, length) of the bytes the hardware takes from this file."""
    header = parse(path)
    return header.payload_offset, header.payload_length


def iter_payload(path, chunk_size=1024 * 1024):
    """The payload of a stored image, header stripped, in chunks."""
    offset, length = payload_range(path)
    with open(path, 'rb') as f:
        f.seek(offset)
        while length > 0:
            chunk = f.read(min(chunk_size, length))
            if not chunk:
                raise exception.InvalidBitstream(
                    format='image', reason='file shrank while being read')
            length -= len(chunk)
            yield chunk


def strip_header(path):
    """The payload as bytes (what DFL_FPGA_FME_PORT_PR takes in memory)."""
    return b''.join(iter_payload(path))


# --- writing ------------------------------------------------------------------

WRITABLE_FORMATS = tuple(_PARSERS)
SAMPLE_PLATFORM = 'cyborg_lite_sample'


def build(fmt, region_type, function_id, function_name, payload):
    """A valid ``fmt`` (gbs or xclbin) image that loads ``function_id``
    (and names it ``function_name``) into regions of ``region_type``,
    around ``payload``; ``parse`` reads those fields back. Ids may be
    dashed or 32 hex digits."""
    name = labels.check(function_name, 'function_name', _invalid)
    if not name:
        _invalid('function_name must not be empty')
    ids = [_uuid(region_type, 'region_type'),
           _uuid(function_id, 'function_id')]
    if fmt == 'gbs':
        return gbs.build(gbs.afu_metadata(*ids, name=name,
                                          platform=SAMPLE_PLATFORM), payload)
    if fmt == 'xclbin':
        # XRT names kernel instances "kernel:instance".
        instance = '%s:%s_1' % (name, name)
        if len(instance.encode('utf-8')) >= 64:
            _invalid('function_name is too long for an xclbin kernel name '
                     '(at most 30 bytes)')
        sections = [
            (xclbin.KIND_BITSTREAM, 'bitstream', payload),
            (xclbin.KIND_IP_LAYOUT, 'ip_layout',
             xclbin.ip_layout([(xclbin.IP_KERNEL, instance)]))]
        return xclbin.build(*ids, vbnv=SAMPLE_PLATFORM, sections=sections)
    _invalid('format must be one of %s, got %r'
             % (', '.join(WRITABLE_FORMATS), fmt))


def _invalid(reason):
    raise exception.Invalid(reason=reason)


def _uuid(value, field):
    compact = normalise_id(value, field)
    if not _HEX32.match(compact or ''):
        _invalid('%s must be a UUID (32 hex digits, dashes allowed), got %r'
                 % (field, value))
    return compact

"""Random and mutated headers: the parsers return a header or raise
InvalidBitstream, never anything else (a 500 at the API)."""
import io
import json
import unicodedata

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st

from cyborg_lite.bitstreams import formats
from cyborg_lite.bitstreams.formats import gbs
from cyborg_lite.bitstreams.formats import xclbin
from cyborg_lite.common import exception
from tests.unit.bitstreams import builders as b

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
GBS = b.build_gbs()
XCLBIN = b.build_xclbin()


def _parse_or_refuse(data):
    """The header, or None when refused; any other exception fails."""
    try:
        header = formats.parse(io.BytesIO(data))
    except exception.InvalidBitstream:
        return None
    # What is accepted can be stored: UTF-8 text with no control
    # character, within the column width.
    for value in (header.function_name, header.platform):
        if value is not None:
            assert len(value) <= 255
            value.encode('utf-8')
            assert not any(unicodedata.category(c) == 'Cc' for c in value)
    return header


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_after_the_gbs_magic(tail):
    _parse_or_refuse(gbs.MAGIC + tail)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_after_the_xclbin_magic(tail):
    _parse_or_refuse(xclbin.MAGIC + tail)


def _mutations(image):
    return st.lists(st.tuples(st.integers(0, len(image) - 1),
                              st.integers(0, 255)), min_size=1, max_size=8)


def _mutate(image, changes):
    data = bytearray(image)
    for index, value in changes:
        data[index] = value
    return bytes(data)


@FUZZ
@given(_mutations(GBS))
def test_mutated_gbs(changes):
    _parse_or_refuse(_mutate(GBS, changes))


@FUZZ
@given(_mutations(XCLBIN))
def test_mutated_xclbin(changes):
    _parse_or_refuse(_mutate(XCLBIN, changes))


@FUZZ
@given(st.integers(0, len(XCLBIN)), st.integers(0, 2 ** 64 - 1),
       st.sampled_from([304, 448, 456 + 24, 456 + 32, 496 + 24, 496 + 32]))
def test_xclbin_lengths_and_offsets(cut, number, at):
    # The fields that say where things are: m_length, m_numSections,
    # section offsets and sizes, set to anything; the file maybe cut.
    data = bytearray(XCLBIN)
    width = 4 if at == 448 else 8
    data[at:at + width] = (number % 2 ** (8 * width)).to_bytes(width,
                                                               'little')
    _parse_or_refuse(bytes(data[:cut]))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() |
    st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) |
    st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=30)
PLACES = [(), ('afu-image',), ('afu-image', 'accelerator-clusters'),
          ('afu-image', 'accelerator-clusters', 0)]
KEYS = ['version', 'platform-name', 'afu-image', 'magic-no', 'interface-uuid',
        'accelerator-clusters', 'name', 'accelerator-type-uuid']


@FUZZ
@given(st.sampled_from(PLACES), st.sampled_from(KEYS), JSON)
def test_gbs_metadata_with_any_value_anywhere(place, key, value):
    metadata = b.gbs_metadata()
    target = metadata
    for step in place:
        target = target[step]
    if isinstance(target, list):
        target[0] = value
    else:
        target[key] = value
    _parse_or_refuse(b.build_gbs(metadata))


@FUZZ
@given(st.text(max_size=300), st.text(max_size=300))
def test_gbs_any_names(name, platform):
    metadata = b.gbs_metadata(name=name)
    metadata['platform-name'] = platform
    header = _parse_or_refuse(b.build_gbs(metadata))
    if header is not None:
        assert header.function_name == name


@FUZZ
@given(st.binary(max_size=2048))
def test_gbs_any_metadata_bytes(raw):
    _parse_or_refuse(b.build_gbs(raw_metadata=raw))


def test_metadata_json_round_trips_for_the_sample():
    # The fuzzed metadata starts from a valid one.
    assert formats.parse(io.BytesIO(GBS)).extra['metadata'] == json.loads(
        GBS[gbs.HEADER_LEN:len(GBS) - len(b.PAYLOAD)])

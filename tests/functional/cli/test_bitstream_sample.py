"""``cyborg-lite bitstream sample`` writes images the real parsers read,
for the fake driver's region type, which the real API stores."""
import hashlib
import uuid

import pytest

from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.cli import samples
from tests.functional.cli import bitstream_cli as b
from tests.functional.cli import conftest as c


def _sample(tmp_path, *args):
    result = c.run('cyborg-lite', ['bitstream', 'sample', '-f', 'json']
                   + list(args), c.clean_env())
    return result


@pytest.mark.parametrize('fmt', ['gbs', 'xclbin'])
def test_sample_fits_the_fake_driver_and_parses(tmp_path, conf, fmt):
    path = tmp_path / ('nlb.' + fmt)
    shown = _sample(tmp_path, '--file', str(path), '--bitstream-format',
                    fmt, '--function-name', 'nlb').json
    header = bitstream_formats.parse(str(path))
    # What the fake driver reports for its regions ([fake_driver]).
    assert header.region_type == conf.fake_driver.region_types[0]
    assert (header.format, header.function_name) == (fmt, 'nlb')
    assert header.function_id == samples.function_id_for('nlb')
    assert header.payload_length >= samples.DEFAULT_PAYLOAD_SIZE
    data = path.read_bytes()
    assert shown == {'file': str(path), 'format': fmt,
                     'region_type': header.region_type,
                     'function_id': header.function_id,
                     'function_name': 'nlb', 'size': len(data),
                     'sha256': hashlib.sha256(data).hexdigest()}


def test_sample_with_given_ids(tmp_path):
    region, function = str(uuid.uuid4()), uuid.uuid4().hex.upper()
    path = tmp_path / 'x.gbs'
    shown = _sample(tmp_path, '--file', str(path), '--region-type', region,
                    '--function-id', function, '--payload-size', '10').json
    header = bitstream_formats.parse(str(path))
    assert (header.region_type, header.function_id) == (
        uuid.UUID(region).hex, function.lower())
    assert header.payload_length == 10
    assert shown['region_type'] == header.region_type


@pytest.mark.parametrize('args, fragment', [
    (('--region-type', 'nope'), "region_type must be a UUID"),
    (('--function-name', 'a\tb'), 'function_name holds a control character'),
    (('--bitstream-format', 'xclbin', '--function-name', 'k' * 31),
     'too long for an xclbin kernel name'),
])
def test_sample_refuses_bad_input_in_one_line(tmp_path, args, fragment):
    result = _sample(tmp_path, '--file', str(tmp_path / 'x'), *args)
    b.one_line_error(result, fragment)
    assert not (tmp_path / 'x').exists()


@pytest.mark.parametrize('fmt', ['gbs', 'xclbin'])
def test_sample_uploads_to_the_api(cli, tmp_path, conf, fmt):
    path = tmp_path / ('s.' + fmt)
    _sample(tmp_path, '--file', str(path), '--bitstream-format', fmt).json
    made = cli('bitstream', 'create', 'sample', '--file', str(path),
               '--bitstream-format', fmt, '-f', 'json').json
    assert (made['status'], made['format'], made['region_type'],
            made['function_id'], made['function_name']) == (
        'active', fmt, conf.fake_driver.region_types[0],
        samples.function_id_for(samples.DEFAULT_NAME), samples.DEFAULT_NAME)


@pytest.mark.parametrize('fmt', ['gbs', 'xclbin'])
def test_the_fake_driver_programs_a_sample(tmp_path, conf, fmt):
    from cyborg_lite.drivers import fake
    conf.set_override('state_dir', str(tmp_path / 'fake'),
                      group='fake_driver')
    conf.set_override('program_delay', 0, group='fake_driver')
    driver = fake.FakeDriver(conf)
    [card, *_] = driver.discover()
    region = card.deployables[0].name
    path = tmp_path / ('s.' + fmt)
    shown = _sample(tmp_path, '--file', str(path), '--bitstream-format',
                    fmt, '--function-name', 'prog').json
    driver.program(card.identity, region, str(path))
    assert driver.loaded_function(card.identity, region) == \
        shown['function_id']

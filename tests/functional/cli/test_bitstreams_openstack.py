"""The same commands as ``openstack accelerator ...`` (our OSC plugin,
with python-openstackclient and python-cyborgclient installed)."""
import uuid

from cyborg_lite.cli import commands
from tests.functional.cli import bitstream_cli as b
from tests.functional.cli import conftest as c


def test_our_commands_are_listed_once(openstack):
    result = openstack('command', 'list', '-f', 'json')
    listed = [cmd for group in result.json for cmd in group['Commands']]
    for name in commands.OSC_COMMANDS:
        assert listed.count('accelerator ' + name) == 1, name


def test_bitstream_round_trip(openstack, tmp_path):
    path = b.write_image(tmp_path)
    made = openstack('accelerator', 'bitstream', 'create', 'nlb', '--file',
                     str(path), '--bitstream-format', 'gbs', '-f', 'json')
    assert made.stderr == ''
    assert made.json['status'] == 'active'
    rows = openstack('accelerator', 'bitstream', 'list', '-f', 'json').json
    assert [r['uuid'] for r in rows] == [made.json['uuid']]
    target = tmp_path / 'copy.gbs'
    got = openstack('accelerator', 'bitstream', 'download',
                    made.json['uuid'], '--file', str(target))
    assert got.rc == 0, got
    assert target.read_bytes() == path.read_bytes()
    assert openstack('accelerator', 'bitstream', 'delete',
                     made.json['uuid']).rc == 0


def test_errors_exit_1_with_the_api_text(openstack):
    missing = str(uuid.uuid4())
    result = openstack('accelerator', 'bitstream', 'show', missing)
    assert result.rc == 1, result
    assert 'Traceback' not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        'Bitstream %s could not be found. (HTTP 404)' % missing)
    result = openstack('accelerator', 'program', 'show', missing)
    assert result.rc == 1, result
    assert 'Programming job %s could not be found' % missing in \
        result.stderr


def test_program_list_and_tree(openstack):
    c.add_device('host1')
    assert openstack('accelerator', 'program', 'list', '-f',
                     'json').json == []
    rows = openstack('accelerator', 'resource-provider', 'tree', 'host1',
                     '-f', 'json').json
    assert [r['name'] for r in rows] == [
        'host1', 'host1_0000:5e:00.0', 'host1_0000:5e:00.0_region0']

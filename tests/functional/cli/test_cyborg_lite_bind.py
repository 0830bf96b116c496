"""``cyborg-lite arq bind|unbind`` through the API to a real conductor."""
import uuid

from tests import waiting
from tests.functional.cli import conftest as c


def _arq(cli, profile='dp1'):
    cli('device', 'profile', 'create', profile, '--group',
        'resources:FPGA=1')
    return cli('arq', 'create', profile, '-f', 'json').json[0]['uuid']


def _wait_for(cli, arq, state, timeout=30):
    return waiting.read_until(
        lambda: cli('arq', 'show', arq, '-f', 'json').json,
        lambda shown: shown['state'] == state, timeout, interval=0.2,
        what='ARQ %s %s' % (arq, state))


def test_bind_wait_unbind_delete(cli, conductor):
    _, [(_, rp)] = c.add_device('host1')
    arq = _arq(cli)
    instance = str(uuid.uuid4())
    bound = cli('arq', 'bind', arq, 'host1', instance, rp, '--wait',
                '-f', 'json')
    assert bound.rc == 0, bound
    shown = bound.json
    assert (shown['state'], shown['hostname'], shown['instance_uuid'],
            shown['device_rp_uuid']) == ('Bound', 'host1', instance, rp)
    assert shown['attach_handle_type'] == 'PCI'
    assert shown['attach_handle_info']['bus'] == '5e'
    # Each state change on stderr, stdout left to the json.
    assert bound.stderr.splitlines()[-1].endswith('-> Bound')

    listed = cli('arq', 'list', '--instance', instance, '-f', 'json').json
    assert [a['uuid'] for a in listed] == [arq]

    unbound = cli('arq', 'unbind', arq, '-f', 'json')
    assert unbound.rc == 0, unbound
    # What it shows is the ARQ after the unbind, not before.
    assert (unbound.json['state'], unbound.json['instance_uuid']) == (
        'Unbound', None)
    _wait_for(cli, arq, 'Unbound')
    assert cli('arq', 'delete', arq).rc == 0
    assert cli('arq', 'list', '-f', 'json').json == []


def test_bind_to_unknown_provider_fails_with_exit_1(cli, conductor):
    arq = _arq(cli)
    result = cli('arq', 'bind', arq, 'host1', str(uuid.uuid4()),
                 str(uuid.uuid4()), '--wait', '--timeout', '30')
    assert result.rc == 1, result
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('ARQ %s: bind ended BindFailed' % arq)
    assert cli('arq', 'show', arq, '-f', 'value', '-c', 'state').stdout \
        == 'BindFailed\n'


def test_delete_by_instance(cli, conductor):
    _, [(_, rp)] = c.add_device('host1')
    arq = _arq(cli)
    instance = str(uuid.uuid4())
    assert cli('arq', 'bind', arq, 'host1', instance, rp, '--wait').rc == 0
    assert cli('arq', 'delete', '--instance', instance).rc == 0
    assert cli('arq', 'list', '-f', 'json').json == []


def test_delete_needs_uuids_or_instance(cli):
    result = cli('arq', 'delete')
    assert result.rc == 1
    assert 'Give ARQ UUIDs or --instance' in result.stderr

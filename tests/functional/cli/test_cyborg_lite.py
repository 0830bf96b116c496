"""The real ``cyborg-lite`` entry point against the real API."""
from tests.functional.cli import conftest as c


def _one_line_error(result, *fragments):
    assert result.rc == 1, result
    assert result.stdout == ''
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert 'Traceback' not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_device_list_filter_and_show(cli):
    fpga, _ = c.add_device('host1')
    gpu, _ = c.add_device('host2', pci='0000:3b:00.0', type_='GPU',
                          vendor='10de', model='A100')
    rows = cli('device', 'list', '-f', 'json').json
    assert {r['uuid']: (r['type'], r['hostname']) for r in rows} == {
        fpga: ('FPGA', 'host1'), gpu: ('GPU', 'host2')}
    assert set(rows[0]) == {'uuid', 'type', 'vendor', 'model', 'hostname',
                            'status', 'health', 'unavailable_reasons'}
    assert (rows[0]['health'], rows[0]['unavailable_reasons']) == (
        'healthy', [])

    rows = cli('device', 'list', '--hostname', 'host2', '-f', 'json').json
    assert [r['uuid'] for r in rows] == [gpu]

    shown = cli('device', 'show', gpu, '-f', 'json').json
    assert (shown['uuid'], shown['vendor'], shown['model']) == (
        gpu, '10de', 'A100')
    assert (shown['health'], shown['health_reason']) == ('healthy', None)
    assert 'links' not in shown


def test_list_follows_every_page(cli, conf):
    # The API serves at most max_limit items per request, then a next link.
    conf.set_override('max_limit', 2, group='api')
    made = {c.add_device('host%d' % i, pci='0000:%02x:00.0' % i)[0]
            for i in range(5)}
    rows = cli('device', 'list', '-f', 'json').json
    assert sorted(r['uuid'] for r in rows) == sorted(made)


def test_long_and_column_selection(cli):
    dev, _ = c.add_device('host1')
    rows = cli('device', 'list', '--long', '-f', 'json').json
    assert 'created_at' in rows[0]
    value = cli('device', 'show', dev, '-f', 'value', '-c', 'hostname')
    assert value.rc == 0 and value.stdout == 'host1\n'


def test_deployable_list_and_show(cli):
    _, regions = c.add_device('host1', regions=2)
    deps = [dep for dep, _ in regions]
    rows = cli('deployable', 'list', '-f', 'json').json
    assert sorted(r['uuid'] for r in rows) == sorted(deps)
    # The 2.5 field is asked for: whether a region is free or being wiped.
    assert [r['device_state'] for r in rows] == ['available', 'available']
    shown = cli('deployable', 'show', deps[1], '-f', 'json').json
    assert shown['name'] == 'host1_0000:5e:00.0_region1'
    assert shown['num_accelerators'] == 1
    assert (shown['device_state'], shown['cleaning_error']) == (
        'available', None)


def test_device_profile_lifecycle(cli):
    made = cli('device', 'profile', 'create', 'dp1',
               '--group', 'resources:FPGA=1,trait:CUSTOM_FPGA_INTEL=required',
               '--group', 'resources:CUSTOM_QAT=2',
               '--description', 'two groups', '-f', 'json').json
    assert made['name'] == 'dp1'
    assert made['groups'] == [
        {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'},
        {'resources:CUSTOM_QAT': '2'}]

    rows = cli('device', 'profile', 'list', '-f', 'json').json
    assert [(r['uuid'], r['name']) for r in rows] == [(made['uuid'], 'dp1')]
    by_name = cli('device', 'profile', 'show', 'dp1', '-f', 'json').json
    by_uuid = cli('device', 'profile', 'show', made['uuid'],
                  '-f', 'json').json
    assert by_name['uuid'] == by_uuid['uuid'] == made['uuid']
    assert by_name['description'] == 'two groups'

    deleted = cli('device', 'profile', 'delete', 'dp1')
    assert deleted.rc == 0 and deleted.stdout == '', deleted
    assert cli('device', 'profile', 'list', '-f', 'json').json == []
    _one_line_error(cli('device', 'profile', 'show', 'dp1'), '(HTTP 404)')


def test_duplicate_profile_is_a_one_line_conflict(cli):
    args = ('device', 'profile', 'create', 'dp1', '--group',
            'resources:FPGA=1')
    assert cli(*args).rc == 0
    _one_line_error(cli(*args), 'dp1', '(HTTP 409)')


def test_arq_create_list_show_delete(cli):
    cli('device', 'profile', 'create', 'two-fpgas',
        '--group', 'resources:FPGA=2')
    made = cli('arq', 'create', 'two-fpgas', '-f', 'json').json
    assert len(made) == 2
    assert {a['state'] for a in made} == {'Initial'}
    assert {a['device_profile_name'] for a in made} == {'two-fpgas'}

    listed = cli('arq', 'list', '-f', 'json').json
    assert sorted(a['uuid'] for a in listed) == sorted(
        a['uuid'] for a in made)
    shown = cli('arq', 'show', made[0]['uuid'], '-f', 'json').json
    assert shown['device_profile_group_id'] == 0
    assert shown['bind_waits_for'] is None       # asked at 2.13

    assert cli('arq', 'delete', made[0]['uuid'], made[1]['uuid']).rc == 0
    assert cli('arq', 'list', '-f', 'json').json == []


def test_api_errors_are_one_line_and_exit_1(cli):
    missing = '00000000-0000-0000-0000-000000000000'
    _one_line_error(cli('device', 'show', missing), missing, '(HTTP 404)')
    _one_line_error(cli('arq', 'create', 'no-such-profile'),
                    'no-such-profile', '(HTTP 404)')


def test_microversion_header_is_sent(cli):
    # 9.9 is past the API's maximum: only a sent header can get a 406.
    result = cli('--os-accelerator-api-version', '9.9', 'device', 'list')
    _one_line_error(result, '(HTTP 406)')


def test_unreachable_api_is_one_line(api_url):
    env = c.clean_env(CYBORG_LITE_URL='http://127.0.0.1:%d'
                      % c.servers.free_port())
    _one_line_error(c.run('cyborg-lite', ['device', 'list'], env),
                    'Unable to connect to http://127.0.0.1:')


def test_unreachable_keystone_is_one_line(api_url):
    env = c.clean_env(
        OS_AUTH_URL='http://127.0.0.1:%d/v3' % c.servers.free_port(),
        OS_USERNAME='u', OS_PASSWORD='p', OS_PROJECT_NAME='p',
        OS_USER_DOMAIN_NAME='Default', OS_PROJECT_DOMAIN_NAME='Default')
    _one_line_error(c.run('cyborg-lite', ['device', 'list'], env),
                    'Keystone')


def test_bad_group_is_a_usage_error(cli):
    result = cli('device', 'profile', 'create', 'dp', '--group', 'nokey')
    assert result.rc == 2
    assert 'expected key=value' in result.stderr

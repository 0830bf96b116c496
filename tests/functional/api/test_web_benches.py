"""The web-layer benches (bench/web_layer.py, bench/http_servers.py) run
at a tiny size, as tests/functional/test_bench_smoke.py runs the others:
the output's structure and that every request succeeded, no timing."""
import pytest

from tests.functional.test_bench_smoke import _bench

pytestmark = pytest.mark.xdist_group('bench_smoke')


def test_web_layer_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'web_layer', '--requests', '3', '--rounds',
                    '2', '--profiles', '2')

    assert result['bench'] == 'web_layer'
    assert result['errors'] == []
    assert list(result['sides']) == ['current']
    scenarios = result['sides']['current']
    assert set(scenarios) == {'version_document', 'show_device',
                              'list_profiles'}
    for entry in scenarios.values():
        assert len(entry['rounds']) == 2
        assert entry['median_us'] > 0


def test_http_servers_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'http_servers', '--devices', '10',
                    '--requests', '4', '--list-requests', '2', '--rounds',
                    '1', '--concurrency', '2')

    assert result['bench'] == 'http_servers'
    assert set(result['servers']) == {'cheroot', 'waitress'}
    for server in result['servers'].values():
        assert set(server) == {'list_devices', 'show_device',
                               'create_profile', 'create_arq'}
        for name, entry in server.items():
            assert entry['errors'] == 0, (name, entry['first_errors'])
            assert entry['requests'] == (2 if name == 'list_devices'
                                         else 4)

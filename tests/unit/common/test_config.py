"""Configuration parsing: clear errors for bad files and values."""
import sys

import pytest
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from cyborg_lite.common import config
from cyborg_lite.common import exception
from cyborg_lite.conf import opts
from cyborg_lite.db import migration
from tests import fork_server


def _fresh_conf():
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    return conf


def test_missing_config_file_is_a_config_error(tmp_path):
    missing = str(tmp_path / 'nope.conf')
    with pytest.raises(exception.ConfigError, match='nope.conf'):
        config.parse_args(['--config-file', missing], conf=_fresh_conf(),
                          setup_logging=False)


def test_bad_value_in_file_is_a_config_error_at_parse(tmp_path):
    path = tmp_path / 'bad.conf'
    path.write_text('[database]\npool_size = many\n')
    with pytest.raises(exception.ConfigError) as info:
        config.parse_args(['--config-file', str(path)], conf=_fresh_conf(),
                          setup_logging=False)
    assert str(info.value) == (
        "Configuration error: [database] pool_size in %s is not valid: "
        "invalid literal for int() with base 10: 'many'" % path)


def test_values_from_file_are_read(tmp_path):
    path = tmp_path / 'ok.conf'
    path.write_text('[DEFAULT]\nhost = node-7\n[database]\npool_size = 3\n')
    conf = _fresh_conf()
    config.parse_args(['--config-file=%s' % path], conf=conf,
                      setup_logging=False)
    assert conf.host == 'node-7'
    assert conf.database.pool_size == 3


def _dbsync(*args):
    return fork_server.run([sys.executable, '-m', 'cyborg_lite.cmd.dbsync',
                            *args], capture_output=True, text=True)


def test_dbsync_missing_config_exits_with_one_line(tmp_path):
    proc = _dbsync('--config-file', str(tmp_path / 'x.conf'), 'current')
    assert proc.returncode == 1
    assert 'does not exist' in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_dbsync_unknown_scheme_exits_with_one_line(tmp_path):
    path = tmp_path / 'c.conf'
    path.write_text('[database]\nconnection = nosuch://h/d\n')
    proc = _dbsync('--config-file', str(path), 'upgrade')
    assert proc.returncode == 1
    assert "unknown scheme 'nosuch'" in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_dbsync_upgrade_twice_then_current(tmp_path):
    path = tmp_path / 'c.conf'
    path.write_text('[database]\nconnection = sqlite:///%s/db.sqlite\n'
                    % tmp_path)
    first = _dbsync('--config-file', str(path), 'upgrade')
    second = _dbsync('--config-file', str(path), 'upgrade')
    current = _dbsync('--config-file', str(path), 'current')
    assert first.returncode == 0, first.stderr
    assert 'upgraded' in first.stdout
    assert second.returncode == 0 and 'nothing to do' in second.stdout
    assert current.stdout.strip() == migration.head()


@pytest.mark.parametrize('group', ['image_api', 'nova', 'placement'])
def test_a_plugin_loaded_from_one_conf_is_not_in_another(group):
    """keystoneauth registers a plugin's options (auth_url, required) on
    the conf it loads from: a conf made afterwards must not have them."""
    loaded = _fresh_conf()
    loaded([], project='cyborg_lite', default_config_files=[])
    loaded.set_override('auth_type', 'password', group=group)
    with pytest.raises(ks_exceptions.MissingRequiredOptions):
        ks_loading.load_auth_from_conf_options(loaded, group)

    fresh = _fresh_conf()
    config.parse_args([], conf=fresh, default_config_files=[],
                      setup_logging=False)
    assert 'auth_url' not in fresh[group]

"""The fake driver's simulated tree has the health files of a real card,
so a fault is injected by writing one (docs/drivers.md)."""
import json
import os
import shutil

import pytest

from cyborg_lite.drivers import fake
from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_fake as tf

CARD0, CARD1 = tf.CARD0, tf.CARD1
SYS = 'fake/sys'


def _fme(tmp_path, card=0):
    region = card * 3   # two regions a card: base region every third
    return tmp_path / SYS / ('class/fpga_region/region%d/dfl-fme.%d'
                             % (region, card))


def _pf(tmp_path, card=0):
    return tmp_path / SYS / ('bus/pci/devices/0000:%02x:00.0' % (0x5e + card))


def test_a_fault_written_into_the_tree_and_cleared(tf_conf, tmp_path):
    driver = tf._driver(tf_conf)
    monitor = hh.monitor(tf_conf, to_fault=2, to_clear=2)
    assert hh.scan(monitor, driver)[CARD0][0] == 'healthy'
    register = _fme(tmp_path) / 'errors/catfatal_errors'
    register.write_text('0x4\n')
    assert hh.scan(monitor, driver)[CARD0][0] == 'healthy'
    assert hh.scan(monitor, driver)[CARD0][:2] == ('unhealthy',
                                                   'catfatal_errors 0x4')
    assert hh.scan(monitor, driver)[CARD1][0] == 'healthy'
    register.write_text('0x0\n')
    states = [hh.scan(monitor, driver)[CARD0][0] for _ in range(4)]
    assert states == ['unhealthy', 'recovering', 'recovering', 'healthy']


@pytest.mark.parametrize('relative,text,expected', [
    ('hwmon/hwmon0/temp1_input', '101000\n',
     ('unhealthy', 'temperature 101 °C ≥ crit 100 °C')),
    ('hwmon/hwmon0/temp1_input', '93000\n',
     ('degraded', 'temperature 93 °C ≥ max 90 °C')),
    ('hwmon/hwmon1/power1_input', '66000000\n',
     ('degraded', 'power 66 W ≥ max 65 W')),
    ('errors/nonfatal_errors', '0x10\n',
     ('degraded', 'nonfatal_errors 0x10')),
])
def test_each_fme_file(tf_conf, tmp_path, relative, text, expected):
    driver = tf._driver(tf_conf)
    monitor = hh.monitor(tf_conf, to_fault=1)
    hh.scan(monitor, driver)
    (_fme(tmp_path) / relative).write_text(text)
    assert hh.scan(monitor, driver)[CARD0][:2] == expected


def test_pci_files_of_the_card(tf_conf, tmp_path):
    driver = tf._driver(tf_conf)
    monitor = hh.monitor(tf_conf, to_fault=1)
    hh.scan(monitor, driver)
    (_pf(tmp_path) / 'aer_dev_nonfatal').write_text(fake.aer_text(
        fake.AER_UNCORRECTABLE, 'TOTAL_ERR_NONFATAL', 3))
    assert hh.scan(monitor, driver)[CARD0][:2] == (
        'degraded', 'aer_dev_nonfatal grew from 0 to 3')


def test_a_port_error_is_its_region_s_own(tf_conf, tmp_path):
    driver = tf._driver(tf_conf)
    monitor = hh.monitor(tf_conf, to_fault=1)
    hh.scan(monitor, driver)
    port = _fme(tmp_path).parent / 'dfl-port.1'
    (port / 'errors/errors').write_text('0x8\n')
    card = hh.scan(monitor, driver)[CARD0]
    assert card[0] == 'healthy'
    assert card[2] == {'region0': ('healthy', None),
                       'region1': ('unhealthy', 'port_errors 0x8')}


def test_a_fault_survives_a_restart_and_old_trees_get_the_files(
        tf_conf, tmp_path):
    tf._driver(tf_conf).discover()
    register = _fme(tmp_path) / 'errors/catfatal_errors'
    register.write_text('0x4\n')
    # A tree of a release before the health files: card 1 has none.
    shutil.rmtree(_fme(tmp_path, 1) / 'errors')
    # One made to vanish (drivers/fake_host.py) stays gone.
    os.unlink(_fme(tmp_path) / 'errors/nonfatal_errors')
    # The same layout: the tree is kept, the missing files written.
    driver = tf._driver(tf_conf)
    driver.discover()
    assert register.read_text() == '0x4\n'
    assert (_fme(tmp_path, 1) / 'errors/catfatal_errors').read_text() == \
        '0x0\n'
    assert not (_fme(tmp_path) / 'errors/nonfatal_errors').exists()
    layout = json.loads((tmp_path / 'fake' / fake.LAYOUT_FILE).read_text())
    assert layout == {'num_cards': 2, 'regions': 2,
                      'region_types': [tf.TYPE_A]}


def test_sriov_regions_have_their_own_function_files(tf_conf, tmp_path):
    driver = tf._driver(tf_conf, sriov=True)
    monitor = hh.monitor(tf_conf, to_fault=1)
    hh.scan(monitor, driver)
    vf = tmp_path / SYS / 'bus/pci/devices/0000:5e:00.2'
    (vf / 'current_link_width').write_text('2\n')
    card = hh.scan(monitor, driver)[CARD0]
    assert card[2]['region1'] == ('degraded', 'link_width x2 < max x8')
    assert card[0] == 'healthy'


@pytest.fixture
def tf_conf(conf, tmp_path):
    conf.set_override('state_dir', str(tmp_path / 'fake'),
                      group='fake_driver')
    conf.set_override('program_delay', 0, group='fake_driver')
    return conf

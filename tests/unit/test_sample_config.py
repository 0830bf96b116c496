"""etc/cyborg-lite.conf.sample is what oslo-config-generator makes now."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _generate(tmp_path, generator_conf, output_name):
    out = tmp_path / output_name
    tool = os.path.join(os.path.dirname(sys.executable),
                        'oslo-config-generator')
    subprocess.run([tool, '--config-file', generator_conf,
                    '--output-file', str(out)],
                   check=True, cwd=ROOT, capture_output=True)
    return out.read_text()


def test_sample_config_is_current(tmp_path):
    generated = _generate(
        tmp_path, os.path.join(ROOT, 'etc',
                               'cyborg-lite-config-generator.conf'),
        'sample.conf')
    with open(os.path.join(ROOT, 'etc', 'cyborg-lite.conf.sample')) as f:
        committed = f.read()
    assert generated == committed, (
        'etc/cyborg-lite.conf.sample is stale: run `make sample-config`')


def test_every_option_has_help():
    from cyborg_lite.conf import opts
    missing = ['%s.%s' % (group, opt.name)
               for group, group_opts in opts.list_opts()
               for opt in group_opts if not (opt.help or '').strip()]
    assert missing == []

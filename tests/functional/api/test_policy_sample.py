"""etc/policy.yaml.sample is what oslopolicy-sample-generator makes from
the defaults in code (regenerate it with the command in docs/api.md)."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')


def test_policy_sample_is_current(tmp_path):
    out = tmp_path / 'policy.yaml.sample'
    # NOTE: a subprocess: the generator registers command-line options on
    # the global CONF, which this test process has parsed already.
    subprocess.run(
        [sys.executable, '-c',
         'from oslo_policy import generator; generator.generate_sample()',
         '--config-file', os.path.join(ROOT, 'etc', 'policy-generator.conf'),
         '--output-file', str(out)],
        check=True, capture_output=True, cwd=ROOT, timeout=120)
    with open(os.path.join(ROOT, 'etc', 'policy.yaml.sample')) as f:
        assert out.read_text() == f.read()
    assert '"cyborg:arq:update"' in out.read_text()

"""Reading Prometheus' text format in tests: prometheus_client's own
parser, and ``promtool check metrics`` (Debian's prometheus package;
skipped without it, except under CI=true)."""
import subprocess

from prometheus_client import parser

from tests import servers


def samples(text, name):
    """[(labels dict, value)] of every sample named ``name``."""
    found = []
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found.append((sample.labels, sample.value))
    return found


def promtool_check(text):
    promtool = servers.require_binary('promtool', 'prometheus')
    done = subprocess.run([promtool, 'check', 'metrics'], input=text,
                          capture_output=True, text=True, timeout=60)
    # NOTE: promtool prints lint problems and exits 3 for them, 1 for a
    # text it cannot parse; both are failures here.
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == '' and done.stderr.strip() == '', \
        done.stdout + done.stderr

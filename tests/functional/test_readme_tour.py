"""README.md's "A first tour", run as written against the real all-in-one.

Each tour (the fenced ``sh`` blocks between ``<!-- tour: NAME -->`` and
``<!-- /tour -->``) runs in one ``bash -euo pipefail``, after the
``export`` lines the all-in-one printed and nothing else, in an empty
directory: a wrong command, option or column fails the test, and so does
a step that does not show what the README says it shows.
"""
import os
import re
import subprocess

import pytest
import requests

from cyborg_lite.bitstreams import signatures
from tests import fork_server
from tests import waiting
from tests.functional.all_in_one import process

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('all_in_one')]

README = os.path.join(os.path.dirname(__file__), '..', '..', 'README.md')
TOUR = re.compile(r'^<!-- tour: (?P<name>[\w-]+) -->\n(?P<body>.*?)'
                  r'^<!-- /tour -->$', re.S | re.M)
SH_BLOCK = re.compile(r'^```sh\n(.*?)^```$', re.S | re.M)
BANNER = 'all-in-one is running'
EXPORT = re.compile(r'^  (export \w+=\S+)$', re.M)
# What each tour leaves in its shell, read back by the test.
TOUR_VARS = ('BITSTREAM', 'ARQ', 'REGION', 'CARD_RP', 'HOST', 'INSTANCE',
             'SIGNED', 'KEY')
# The CLI and OSC must not pick up whoever runs the tests.
SCRUBBED_PREFIXES = ('OS_', 'CYBORG_LITE_', 'PLACEMENT_')
ANY = object()
PLACEMENT = {'X-Auth-Token': 'admin',
             'OpenStack-API-Version': 'placement 1.29'}


def readme_tours(text):
    """{tour name: its sh blocks joined into one script}."""
    return {m['name']: ''.join(SH_BLOCK.findall(m['body']))
            for m in TOUR.finditer(text)}


def test_the_readme_has_its_tours():
    with open(README) as f:
        tours = readme_tours(f.read())
    assert sorted(tours) == ['cyborg-lite', 'openstack', 'signed']
    assert 'cyborg-lite bitstream sign ' in tours['signed']
    assert 'cyborg-lite arq bind' in tours['cyborg-lite']
    assert 'openstack accelerator arq create' in tours['openstack']


class _LoggedAllInOne(process.AllInOneProcess):
    """The console script, its output in a file (a pipe nobody reads
    would fill up and stop it)."""

    def start(self):
        self.log_path = os.path.join(self.state_dir, 'aio.log')
        os.makedirs(self.state_dir, exist_ok=True)
        with open(self.log_path, 'w') as log:
            self.proc = fork_server.popen(self.args, stdout=log,
                                          stderr=subprocess.STDOUT, text=True)
        return self

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def exports(self):
        """The banner's ``export`` lines, once it is printed (in one
        write, so its first line means all of it)."""
        def read():
            if self.proc.poll() is not None:
                raise AssertionError('all-in-one exited:\n%s'
                                     % self.read_log()[-3000:])
            return self.read_log()
        log = waiting.read_until(read, lambda text: BANNER in text,
                                 timeout=120, what='the banner')
        lines = EXPORT.findall(log)
        assert sorted(line.split('=')[0] for line in lines) == [
            'export CYBORG_LITE_URL', 'export PATH', 'export PLACEMENT_URL']
        return lines

    def candidates(self):
        url = 'http://127.0.0.1:%d/allocation_candidates' % (
            self.placement_port)
        body = requests.get(url, params={'resources': 'FPGA:1'},
                            headers=PLACEMENT, timeout=30).json()
        return len(body['allocation_requests'])


@pytest.fixture(scope='module')
def aio(tmp_path_factory):
    aio = _LoggedAllInOne(tmp_path_factory.mktemp('tour') / 'state').start()
    try:
        aio.banner_exports = aio.exports()
        # A user reads the banner before pasting; a test is quicker than
        # the agent's first report reaching Placement.
        waiting.read_until(aio.candidates, lambda n: n == 2, timeout=60,
                           what='2 FPGA cards offered in Placement')
        yield aio
    finally:
        assert aio.stop() == 0
        process.kill_leftovers(aio.placement_port)


def _run_tour(aio, name, workdir):
    """(stdout, stderr, the tour's shell variables); ``aio.tour_log`` is
    what the all-in-one logged meanwhile."""
    logged = len(aio.read_log())
    with open(README) as f:
        script = readme_tours(f.read())[name]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(SCRUBBED_PREFIXES)}
    env['HOME'] = str(workdir)
    dump = ''.join('printf "%s=%%s\\n" "${%s:-}" >> tour.vars\n' % (v, v)
                   for v in TOUR_VARS)
    source = '\n'.join(aio.banner_exports) + '\n' + script + dump
    proc = subprocess.run(['bash', '-euo', 'pipefail', '-c', source],
                          cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=400)
    assert proc.returncode == 0, (
        'the %s tour failed (rc %d)\nstdout:\n%s\nstderr:\n%s'
        % (name, proc.returncode, proc.stdout, proc.stderr))
    with open(os.path.join(workdir, 'tour.vars')) as f:
        shell = dict(line.rstrip('\n').split('=', 1) for line in f)
    aio.tour_log = aio.read_log()[logged:]
    return proc.stdout, proc.stderr, shell


def _row(*cells):
    """A row of a cliff table with these cells (``ANY`` matches any)."""
    return re.compile(r'^\|%s$' % ''.join(
        r' [^|]*? +\|' if c is ANY else r' %s +\|' % re.escape(c)
        for c in cells), re.M)


def _field(name, value):
    """A row of a cliff ``show`` table."""
    return _row(name, value)


def _api(aio, path, version):
    return requests.get(aio.api + '/v2' + path, timeout=30, headers={
        'OpenStack-API-Version': 'accelerator %s' % version})


def _get(aio, path, version):
    resp = _api(aio, path, version)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _check_outcome(aio, shell):
    """What the service holds after a tour: the region was programmed by a
    job that succeeded, wiped after the unbind and is free again, and the
    ARQ and the profile are gone."""
    region, bitstream = shell['REGION'], shell['BITSTREAM']
    jobs = _get(aio, '/programs?bitstream_uuid=%s' % bitstream, '2.4')
    assert [(j['deployable_uuid'], j['state']) for j in jobs['programs']] == [
        (region, 'succeeded')]
    shown = _get(aio, '/deployables/%s' % region, '2.5')
    assert (shown['rp_uuid'], shown['bitstream_id'], shown['device_state'],
            shown['cleaning_error']) == (
        shell['CARD_RP'], bitstream, 'available', None)
    # Wiped during this tour (the same region may serve both tours).
    assert re.search(r'Deployable %s cleaned \(try [-0-9a-f]+\): available'
                     % region, aio.tour_log)
    assert _api(aio, '/accelerator_requests/%s' % shell['ARQ'],
                '2.3').status_code == 404
    profiles = _get(aio, '/device_profiles', '2.3')
    assert 'nlb-dp' not in [p['name'] for p in profiles['device_profiles']]
    assert shell['HOST'] == 'aio-host'


def test_cyborg_lite_tour(aio, tmp_path):
    out, err, shell = _run_tour(aio, 'cyborg-lite', tmp_path)
    bitstream, card_rp = shell['BITSTREAM'], shell['CARD_RP']
    assert _field('status', 'active').search(out)
    assert _field('function_name', 'nlb').search(out)
    # The candidate list shows the card the bind then names.
    assert re.search(r'\| %s \| FPGA=0/1' % card_rp, out)
    # Bound, with the region's PCI function as the attach handle, after
    # the programming job the bind started.
    assert '%s: BindStarted -> Bound' % shell['ARQ'] in err
    assert _field('state', 'Bound').search(out)
    assert _field('device_rp_uuid', card_rp).search(out)
    assert _field('attach_handle_type', 'PCI').search(out)
    assert re.search(r'^\| attach_handle_info\s+\| \{"bus": ', out, re.M)
    job = _row(ANY, 'succeeded', shell['REGION'], bitstream, 'aio-host',
               'None')
    assert job.search(out)
    # The region while bound, then after the unbind and its wipe.
    allocated = _field('device_state', 'allocated').search(out)
    assert allocated and _field('bitstream_id', bitstream).search(out)
    assert _field('state', 'Unbound').search(out)
    after = _row(ANY, bitstream, 'available', 'None').search(out)
    assert after and after.start() > allocated.start()
    _check_outcome(aio, shell)


def test_openstack_tour(aio, tmp_path):
    out, err, shell = _run_tour(aio, 'openstack', tmp_path)
    assert _field('status', 'active').search(out)
    assert _field('name', 'nlb-dp').search(out)
    # Stock OSC shows the ARQ bound, with its attach handle.
    assert _field('state', 'Bound').search(out)
    assert _field('instance_uuid', shell['INSTANCE']).search(out)
    assert _field('attach_handle_type', 'PCI').search(out)
    assert re.search(r"^\| attach_handle_info\s+\| \{'bus': ", out, re.M)
    job = _row(ANY, 'succeeded', shell['REGION'], shell['BITSTREAM'],
               'aio-host', 'None')
    assert job.search(out)
    assert _field('device_state', 'available').search(out)
    _check_outcome(aio, shell)


def test_signed_tour(aio, tmp_path):
    out, err, shell = _run_tour(aio, 'signed', tmp_path)
    signed = shell['SIGNED']
    assert _field('algorithm', 'ed25519').search(out)
    assert _field('signature_status', 'verified').search(out)
    assert _field('signer', 'tour-signer').search(out)
    assert _field('state', 'succeeded').search(out)
    assert _field('bitstream_uuid', signed).search(out)
    assert _row('*', 'warn', 'configuration').search(out)
    assert _field('revocation_reason', 'end of the tour').search(out)
    assert _field('signature_status', 'revoked_key').search(out)
    # Once revoked, refused under the all-in-one's warn too.
    assert 'refused, as it should be' in out
    assert re.search(r'Signature check before programming refused '
                     r'bitstream %s: its signature is revoked_key .* is '
                     r'warn\.' % signed, err)
    assert err.count('Signature check') == 1    # nothing before it
    # What the service holds: the job ran over the signed image, and the
    # key is revoked.
    jobs = _get(aio, '/programs?bitstream_uuid=%s' % signed, '2.4')
    assert [j['state'] for j in jobs['programs']] == ['succeeded']
    key = _get(aio, '/trusted_keys/%s' % shell['KEY'],
               signatures.MICROVERSION)
    assert key['revoked_at'] and key['name'] == 'tour-signer'

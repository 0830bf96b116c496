"""Signed bitstreams on many hosts: the API under gunicorn, two conductors,
three agents over RabbitMQ and PostgreSQL, each agent downloading images
from the API over HTTP ([agent] image_source = http).

Valid signed images program under each of the three policies (one
project per policy, set by an admin through the API); under ``enforce``
an unsigned image, a key nobody trusts, a revoked key and a signature over
another image are refused by the conductor before any job, and a byte
flipped in the API's store or on the HTTP path between the API and an
agent by that agent's own check: 0 programs (the simulated region keeps
its function) and an error naming the check, each time.
"""
import collections
import configparser
import os

import pytest
import requests

from cyborg_lite.bitstreams import signatures
from tests import servers
from tests import signing_keys as sk
from tests.unit.bitstreams import builders

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

V = {'OpenStack-API-Version': 'accelerator ' + signatures.MICROVERSION}
# Functions no other test of the package loads; one image each, as the
# store keeps one file per content (a flipped file is every copy's).
SIGNED_AFU = '5197ed00-1b2c-4d5e-8f90-a1b2c3d4e5f6'
OTHER_AFU = '5197ed01-1b2c-4d5e-8f90-a1b2c3d4e5f6'
STORE_AFU = '5197ed02-1b2c-4d5e-8f90-a1b2c3d4e5f6'
TRANSIT_AFU = '5197ed03-1b2c-4d5e-8f90-a1b2c3d4e5f6'
CONDUCTOR_CHECK = 'Signature check before programming refused'
AGENT_CHECK = 'Signature check on the agent failed'
ENDED = ('succeeded', 'failed', 'cancelled')


def _image(afu):
    return builders.build_gbs(builders.gbs_metadata(
        interface_uuid=builders.INTERFACE_UUID, afu_uuid=afu))


def _as(project):
    return dict(V, **{'X-Roles': 'member,reader', 'X-Project-Id': project,
                      'X-User-Id': 'user-' + project})


def _signed_bitstream(cluster, name, key=None, key_id=None, image=None,
                      signed_image=None):
    """A public bitstream of ``image`` (SIGNED_AFU's by default), signed
    by ``key`` over ``signed_image`` (the image itself by default)."""
    image = image or _image(SIGNED_AFU)
    made = cluster.call('POST', '/bitstreams', 201, headers=V, json={
        'name': name, 'format': 'gbs', 'visibility': 'public'}).json()
    cluster.call('PUT', '/bitstreams/%s/file' % made['uuid'], 204,
                 data=image, headers=dict(V, **{
                     'Content-Type': 'application/octet-stream'}))
    if key is not None:
        body = {'signature': sk.sign(key, signed_image or image)}
        if key_id:
            body['key_id'] = key_id
        cluster.call('PUT', '/bitstreams/%s/signature' % made['uuid'], 200,
                     headers=V, json=body)
    return cluster.call('GET', '/bitstreams/' + made['uuid'], 200,
                        headers=V).json()


def _trust(cluster, key, name):
    return cluster.call('POST', '/trusted_keys', 201, headers=V, json={
        'name': name, 'public_key': sk.public_pem(key)}).json()


def _policy(cluster, project, policy):
    cluster.call('PUT', '/signature_policies/' + project, 200, headers=V,
                 json={'policy': policy})


# A region (deployable) as the API lists it; ``host`` and ``name`` are
# what cluster.afu_id_path looks its simulated hardware up by (a card's
# regions share its provider in Placement: jobs name deployables).
Target = collections.namedtuple('Target', ['host', 'name', 'uuid'])


def _program(cluster, project, region, bitstream, expect=202):
    return cluster.call('POST', '/programs', expect, headers=_as(project),
                        json={'deployable_uuid': region.uuid,
                              'bitstream_uuid': bitstream['uuid']})


def _ended(cluster, job_uuid):
    return cluster.wait_for(
        lambda: (lambda j: j if j['state'] in ENDED else None)(
            cluster.job(job_uuid)), 60, 'job %s ending' % job_uuid)


def _hardware(cluster, region):
    with open(cluster.afu_id_path(region)) as f:
        return f.read().strip()


def _regions(cluster):
    """{host: [Target]} of every FPGA region, by name."""
    deps = cluster.call('GET', '/deployables', 200).json()['deployables']
    return {host: sorted((Target(host, d['name'], d['uuid']) for d in deps
                          if d['name'].startswith(host + '_') and
                          d['region_type']), key=lambda t: t.name)
            for host in cluster.agent_hosts}


@pytest.fixture(scope='module')
def signer(cluster):
    key = sk.new_key('ecdsa')
    _trust(cluster, key, 'mh-release')
    return key


def test_valid_signed_images_program_under_every_policy(cluster, signer):
    bitstream = _signed_bitstream(cluster, 'mh-signed', signer)
    assert (bitstream['signature_status'], bitstream['signer']) == (
        'verified', 'mh-release')
    regions = _regions(cluster)
    targets = {'disabled': regions['host-0'][0],
               'warn': regions['host-0'][1],
               'enforce': regions['host-2'][0]}
    jobs = {}
    for policy, region in targets.items():
        _policy(cluster, 'sig-' + policy, policy)
        jobs[policy] = _program(cluster, 'sig-' + policy, region,
                                bitstream).json()['uuid']
    wanted = builders.hex32(SIGNED_AFU)
    for policy, job_uuid in jobs.items():
        job = _ended(cluster, job_uuid)
        assert (job['state'], job['error']) == ('succeeded', None), job
        assert _hardware(cluster, targets[policy]) == wanted


def test_under_enforce_the_conductor_refuses_untrusted_images(cluster,
                                                              signer):
    _policy(cluster, 'sig-enforce', 'enforce')
    region = _regions(cluster)['host-1'][1]
    before = _hardware(cluster, region)
    stranger = sk.new_key('ecdsa')
    revoked = sk.new_key('ed25519')
    revoked_key = _trust(cluster, revoked, 'mh-revoked')
    cases = {
        'unsigned': _signed_bitstream(cluster, 'mh-unsigned'),
        'untrusted_key': _signed_bitstream(cluster, 'mh-stranger', stranger,
                                           key_id=sk.key_id(stranger)),
        'invalid': _signed_bitstream(cluster, 'mh-other', signer,
                                     signed_image=_image(OTHER_AFU)),
        'revoked_key': _signed_bitstream(cluster, 'mh-revoked', revoked),
    }
    cluster.call('POST', '/trusted_keys/%s/revoke' % revoked_key['uuid'],
                 200, headers=V, json={'reason': 'test'})
    for status, bitstream in cases.items():
        resp = _program(cluster, 'sig-enforce', region, bitstream,
                        expect=409)
        fault = resp.json()['error_message']
        assert CONDUCTOR_CHECK in fault and 'is %s' % status in fault, (
            status, fault)
        assert cluster.call('GET', '/programs', 200, headers=V, params={
            'bitstream_uuid': bitstream['uuid']}).json()['programs'] == []
    assert _hardware(cluster, region) == before


def test_a_byte_flipped_in_the_store_is_refused_by_the_agent(cluster,
                                                             signer):
    _policy(cluster, 'sig-enforce', 'enforce')
    region = _regions(cluster)['host-1'][1]
    before = _hardware(cluster, region)
    image = _image(STORE_AFU)
    bitstream = _signed_bitstream(cluster, 'mh-store', signer, image=image)
    assert bitstream['signature_status'] == 'verified'
    sha = bitstream['sha256']
    path = os.path.join(cluster.basedir, 'bitstreams', sha[:2], sha)
    with open(path, 'r+b') as f:
        f.seek(len(image) - 1)
        f.write(bytes([image[-1] ^ 0xff]))
    job = _ended(cluster, _program(cluster, 'sig-enforce', region,
                                   bitstream).json()['uuid'])
    assert job['state'] == 'failed'
    assert AGENT_CHECK in job['error'] and 'does not verify' in job['error']
    assert _hardware(cluster, region) == before


class FlipOneByte:
    """A hop between an agent and the API that flips the last byte of
    every image it carries."""

    def __init__(self, upstream):
        self.upstream = upstream

    def __call__(self, environ, start_response):
        url = self.upstream + environ['PATH_INFO']
        if environ.get('QUERY_STRING'):
            url += '?' + environ['QUERY_STRING']
        headers = {k[5:].replace('_', '-').title(): v
                   for k, v in environ.items() if k.startswith('HTTP_')}
        resp = requests.get(url, headers=headers, timeout=30)
        body = resp.content
        if url.endswith('/file') and body:
            body = body[:-1] + bytes([body[-1] ^ 0xff])
        kept = [(k, v) for k, v in resp.headers.items()
                if k.lower() in ('content-type', 'etag', 'digest')]
        start_response('%d %s' % (resp.status_code, resp.reason),
                       kept + [('Content-Length', str(len(body)))])
        return [body]


def _agent_through(cluster, host, endpoint):
    """Restart ``host``'s agent with its images from ``endpoint``."""
    cluster.write_agent_conf(host)
    if endpoint is not None:
        path = cluster.conf_path(host)
        parser = configparser.RawConfigParser()
        parser.optionxform = str
        parser.read(path)
        parser.set('image_api', 'endpoint_override', endpoint)
        with open(path, 'w') as f:
            parser.write(f)
    cluster.restart(host)


def test_a_byte_flipped_in_transit_is_refused_by_the_agent(cluster, signer):
    _policy(cluster, 'sig-enforce', 'enforce')
    region = _regions(cluster)['host-2'][1]
    before = _hardware(cluster, region)
    upstream = 'http://127.0.0.1:%d' % cluster.api_port
    bitstream = _signed_bitstream(cluster, 'mh-transit', signer,
                                  image=_image(TRANSIT_AFU))
    with servers.serving(FlipOneByte(upstream)) as hop:
        _agent_through(cluster, 'host-2', hop)
        try:
            job = _ended(cluster, _program(cluster, 'sig-enforce', region,
                                           bitstream).json()['uuid'])
        finally:
            _agent_through(cluster, 'host-2', None)
    assert job['state'] == 'failed', job
    assert AGENT_CHECK in job['error'] and 'does not verify' in job['error']
    assert _hardware(cluster, region) == before
    # The same image through the direct path programs.
    job = _ended(cluster, _program(cluster, 'sig-enforce', region,
                                   bitstream).json()['uuid'])
    assert job['state'] == 'succeeded', job
    assert _hardware(cluster, region) == builders.hex32(TRANSIT_AFU)


"""Bitstreams and programming on a matrix host: the operator's and the
project's uploads, trusted keys and signature policies, and the
program jobs (POST /v2/programs)."""
import uuid

from tests import signing_keys
from tests import waiting
from tests.functional.matrix.services import OPERATOR
from tests.unit.bitstreams import builders


class Programs:
    """A Host's bitstreams, keys and program jobs, over the API."""

    def bitstream(self, image=None, headers=OPERATOR, visibility='public',
                  signature=None):
        """A bitstream of ``image`` (a GBS of a new function by default)
        uploaded by ``headers``' caller (the operator: public);
        ``signature`` (base64, as the API takes it) attached. Its body."""
        image = image if image is not None else new_image()
        body = {'name': 'bs-%s' % uuid.uuid4().hex[:6], 'format': 'gbs',
                'vendor': 'intel', 'version': '1.0',
                'visibility': visibility}
        created = self.call('POST', '/bitstreams', 201, headers=headers,
                            json=body).json()
        self.call('PUT', '/bitstreams/%s/file' % created['uuid'], 204,
                  headers=dict(headers, **{
                      'Content-Type': 'application/octet-stream'}),
                  data=image)
        if signature is not None:
            self.call('PUT', '/bitstreams/%s/signature' % created['uuid'],
                      200, headers=headers, json={'signature': signature})
        return self.call('GET', '/bitstreams/' + created['uuid'], 200,
                         headers=headers).json()

    def trust(self, key, project_id=None):
        """An admin trusts ``key`` (for every project by default); the
        trusted key's uuid."""
        body = {'name': 'key-%s' % uuid.uuid4().hex[:6],
                'public_key': signing_keys.public_pem(key)}
        if project_id:
            body['project_id'] = project_id
        return self.call('POST', '/trusted_keys', 201, headers=OPERATOR,
                         json=body).json()['uuid']

    def revoke(self, key_uuid):
        self.call('POST', '/trusted_keys/%s/revoke' % key_uuid, 200,
                  headers=OPERATOR, json={'reason': 'leaked'})

    def enforce(self, policy='enforce'):
        """This host's project's signature policy."""
        self.call('PUT', '/signature_policies/' + self.project, 200,
                  headers=OPERATOR, json={'policy': policy})

    def program(self, bitstream_uuid, name='region0', card=0,
                headers=None, status=202, **extra):
        """POST /v2/programs for the region; the response."""
        body = dict(deployable_uuid=self.region(name, card)['uuid'],
                    bitstream_uuid=bitstream_uuid, **extra)
        return self.call('POST', '/programs', status,
                         headers=headers or self.member, json=body)

    def job(self, job_uuid, headers=None):
        return self.call('GET', '/programs/' + job_uuid, 200,
                         headers=headers or OPERATOR).json()

    def wait_job(self, job_uuid, timeout=30):
        return waiting.read_until(
            lambda: self.job(job_uuid),
            lambda j: j['state'] in ('succeeded', 'failed', 'cancelled'),
            timeout, what='job %s ended' % job_uuid)


def new_image(afu_uuid=None):
    """A GBS image for the fake driver's regions loading a new function
    (``afu_uuid``, a fresh one by default)."""
    return builders.build_gbs(builders.gbs_metadata(
        interface_uuid=builders.INTERFACE_UUID,
        afu_uuid=afu_uuid or str(uuid.uuid4())))

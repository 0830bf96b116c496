"""A multihost cluster's API as its users call it (cluster.py): device
profiles, ARQs and their binds (as Nova), bitstreams and program jobs,
and the conductors' metrics."""
import collections
import uuid

import requests

from tests import waiting
from tests.functional.multihost.configs import REGION_MEMORY_MB
from tests.functional.multihost.configs import REGION_TYPE

ACCEL = {'OpenStack-API-Version': 'accelerator 2.3',
         'Content-Type': 'application/json'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
RESOLVED = ('Bound', 'BindFailed')


class ApiCalls:
    """A Cluster's calls to the API and to the conductors' /metrics."""

    def call(self, method, path, expect=None, headers=None, **kwargs):
        kwargs.setdefault('timeout', 30)
        resp = self.session.request(method, self.api + path,
                                    headers=dict(ACCEL, **(headers or {})),
                                    **kwargs)
        if expect is not None and resp.status_code != expect:
            raise AssertionError('%s %s -> %s %s' % (
                method, path, resp.status_code, resp.text))
        return resp

    def create_profile(self, name, memory_mb=REGION_MEMORY_MB, extra=None):
        group = {'resources:FPGA': '1',
                 'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': str(memory_mb),
                 'trait:CUSTOM_FPGA_REGION_%s' % REGION_TYPE.upper():
                     'required'}
        group.update(extra or {})
        self.call('POST', '/device_profiles', 201,
                  json=[{'name': name, 'groups': [group]}])
        return self.call('GET', '/device_profiles/' + name,
                         200).json()['device_profile']

    def create_arqs(self, profile_name, count=1):
        arqs = []
        for _ in range(count):
            arqs += self.call('POST', '/accelerator_requests', 201,
                              json={'device_profile_name': profile_name}
                              ).json()['arqs']
        return arqs

    def bind(self, arq_uuid, region, instance=None, session=None):
        instance = instance or str(uuid.uuid4())
        patch = {arq_uuid: [
            {'path': '/hostname', 'op': 'add', 'value': region.host},
            {'path': '/device_rp_uuid', 'op': 'add',
             'value': region.rp_uuid},
            {'path': '/instance_uuid', 'op': 'add', 'value': instance}]}
        resp = (session or requests).patch(
            self.api + '/accelerator_requests', headers=ACCEL, json=patch,
            timeout=30)
        if resp.status_code != 202:
            raise AssertionError('bind %s -> %s %s' % (
                arq_uuid, resp.status_code, resp.text))
        return instance

    def upload_bitstream(self, name, afu_uuid, visibility='private'):
        """An active GBS bitstream whose image loads ``afu_uuid``."""
        from tests.unit.bitstreams import builders
        image = builders.build_gbs(builders.gbs_metadata(
            interface_uuid=builders.INTERFACE_UUID, afu_uuid=afu_uuid))
        resp = self.session.post(
            self.api + '/bitstreams', headers=V24, timeout=30,
            json={'name': name, 'format': 'gbs', 'vendor': 'intel',
                  'version': '1', 'visibility': visibility})
        assert resp.status_code == 201, resp.text
        bs_uuid = resp.json()['uuid']
        resp = self.session.put(
            self.api + '/bitstreams/%s/file' % bs_uuid, data=image,
            headers=dict(V24, **{'Content-Type':
                                 'application/octet-stream'}), timeout=30)
        assert resp.status_code == 204, resp.text
        return bs_uuid

    def job(self, job_uuid):
        return self.call('GET', '/programs/' + job_uuid, 200,
                         headers=V24).json()

    def arq(self, arq_uuid):
        return self.call('GET', '/accelerator_requests/' + arq_uuid,
                         200).json()

    def wait_resolved(self, arq_uuids, timeout):
        """{uuid: arq} once every ARQ is Bound or BindFailed; raises with
        the stragglers' states after ``timeout`` seconds."""
        pending, done = set(arq_uuids), {}

        def all_resolved():
            for arq_uuid in sorted(pending):
                arq = self.arq(arq_uuid)
                if arq['state'] in RESOLVED:
                    done[arq_uuid] = arq
            pending.difference_update(done)
            return not pending
        if not waiting.until(all_resolved, timeout, interval=0.3):
            raise AssertionError('ARQs not resolved after %ss: %s' % (
                timeout, {u: self.arq(u)['state'] for u in pending}))
        return done

    def delete_arqs(self, arq_uuids):
        arq_uuids = list(arq_uuids)
        for i in range(0, len(arq_uuids), 20):
            self.call('DELETE', '/accelerator_requests', 204,
                      params={'arqs': ','.join(arq_uuids[i:i + 20])})

    def handle_double_use(self):
        """Attach handles held by more than one ARQ, from the database."""
        return self.query(
            'SELECT attach_handle_id, count(*) FROM accelerator_requests '
            'WHERE attach_handle_id IS NOT NULL GROUP BY attach_handle_id '
            'HAVING count(*) > 1')

    def wait_for(self, predicate, timeout, what, interval=0.5):
        value = waiting.until(predicate, timeout, interval)
        if not value:
            raise AssertionError('%s not reached after %ss' % (what, timeout))
        return value

    def conductor_samples(self):
        """{(sample name, sorted labels): value} added up over every
        conductor's /metrics port (a call goes to whichever conductor
        takes it from the topic)."""
        from prometheus_client import parser
        total = collections.Counter()
        for port in self.conductor_metrics_ports.values():
            text = requests.get('http://127.0.0.1:%d/metrics' % port,
                                timeout=10).text
            for family in parser.text_string_to_metric_families(text):
                for sample in family.samples:
                    total[sample.name, tuple(sorted(
                        sample.labels.items()))] += sample.value
        return total

"""Kubernetes on a matrix host: ResourceClaims the scheduler allocated
on the host's slices, and the kubelet's Prepare and Unprepare of them
(a test client playing the kubelet on the plugin's unix sockets)."""
from tests import waiting
from tests.unit.kubernetes import resource_claims as rc


class KubernetesPart:
    """A Host's claims and its kubelet (``self.kubelet``)."""

    def claim(self, name, regions=('region0',), card=0, config=()):
        """An allocated ResourceClaim of this host's namespace for the
        slices' devices of ``regions``, put in the apiserver."""
        devices = [('fpga', self.slice_device(r, card)['name'])
                   for r in regions]
        claim = rc.allocated_claim(name, devices, namespace=self.namespace,
                                   pool=self.host, config=list(config))
        self.services.apiserver.put_claim(claim)
        return claim

    def prepare(self, claim, timeout=30):
        """The kubelet's NodePrepareResources, retried while the plugin
        answers that it is still preparing; the claim's error ('' when
        prepared)."""
        uid = claim['metadata']['uid']
        answers = []

        def done():
            response = self.kubelet.prepare('v1', [rc.ref(claim)])
            answers.append(response.claims[uid].error)
            return 'still being prepared' not in answers[-1]
        waiting.until(done, timeout=timeout, interval=0.1)
        return answers[-1]

    def unprepare(self, claim):
        uid = claim['metadata']['uid']
        response = self.kubelet.unprepare('v1', [rc.ref(claim)])
        return response.claims[uid].error

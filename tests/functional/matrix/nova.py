"""Nova and libvirt on a matrix host: Nova's scheduler kept to the
host's tree (the session's Placement serves other tests' hosts), its
device profiles, claims and binds, and libvirt's hand-over of a Bound
ARQ's function to the guest and back (the fake host's vfio-pci)."""
import uuid

from tests import waiting
from tests.functional import nova_order
from tests.functional.matrix.cards import MEMORY_MB
from tests.functional.matrix.cards import REGION_TRAIT
from tests.functional.matrix.services import OPERATOR


class NovaOnThisHost(nova_order.Nova):
    """Nova, asked to boot on this host: of Placement's candidates, those
    in its tree (the session's Placement serves other tests' hosts)."""

    def __init__(self, host):
        super().__init__(host.services.api + '/v2',
                         host.services.placement.endpoint,
                         lambda rp: host.host, caller=host.member)
        self.host = host
        self.claimed = []

    def candidates(self, groups):
        root = self.host.root()
        return [c for c in super().candidates(groups)
                if all(self.host.root_of(rp) == root
                       for rp in c['allocations'])]

    def claim(self, instance, candidate):
        self.claimed.append(instance)
        super().claim(instance, candidate)

    def free_all(self):
        """What Nova held in the session's Placement, given back."""
        for instance in self.claimed:
            self._free(instance)


class NovaPart:
    """A Host's Nova (``self.nova``, a NovaOnThisHost) and libvirt."""

    def profile(self, extra=None, traits=(), more_groups=()):
        """A device profile (an admin's, public) for one region of the
        fake driver's type with ``extra`` keys and ``traits``, then
        ``more_groups``; its name."""
        group = {'resources:FPGA': '1',
                 'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': str(MEMORY_MB),
                 'trait:' + REGION_TRAIT: 'required'}
        group.update(('trait:' + t, 'required') for t in traits)
        group.update(extra or {})
        name = 'dp-%s' % uuid.uuid4().hex[:8]
        self.call('POST', '/device_profiles', 201, headers=OPERATOR,
                  json=[{'name': name,
                         'groups': [group] + list(more_groups)}])
        return name

    def boot(self, profile):
        """Nova's boot on this host: (instance, [Bound ARQ])."""
        return self.nova.boot(profile)

    def nova_claim(self, profile, name='region0', card=0):
        """Nova's scheduler claims in Placement the candidate on the
        provider of deployable ``name``; the instance."""
        rp = self.region(name, card)['rp_uuid']
        [candidate] = [c for c in self.nova.candidates(
            self.nova.request_groups(profile)) if rp in c['allocations']]
        instance = str(uuid.uuid4())
        self.nova.claim(instance, candidate)
        return instance

    def bind_claimed(self, profile, instance, name='region0', card=0):
        """Nova's bind, after its claim (nova_claim), of an ARQ of
        ``profile`` for ``instance`` on deployable ``name``'s provider;
        the ARQ once resolved."""
        [arq] = self.nova._create_arqs(profile)
        self.nova._bind({arq['uuid']: {
            'hostname': self.host, 'instance_uuid': instance,
            'device_rp_uuid': self.region(name, card)['rp_uuid']}})
        return self.wait_arq(arq['uuid'])

    def arq(self, arq_uuid):
        return self.call('GET', '/accelerator_requests/' + arq_uuid,
                         200).json()

    def wait_arq(self, arq_uuid, states=('Bound', 'BindFailed'),
                 timeout=30):
        return waiting.read_until(
            lambda: self.arq(arq_uuid), lambda a: a['state'] in states,
            timeout, what='ARQ %s in %s' % (arq_uuid, states))

    def bound_region(self, arq, device_uuid=None):
        """The short name of the deployable a Bound ARQ holds (its
        bind's history row names it)."""
        device_uuid = device_uuid or self.device()['uuid']
        [dep_uuid] = [r['deployable_uuid'] for r in self.history(device_uuid)
                      if r['event'] == 'arq.bind.end' and
                      r['object_uuid'] == arq['uuid']]
        [name] = [self.key_of(d) for d in self.deployables()
                  if d['uuid'] == dep_uuid]
        return name

    def hand_to_guest(self, arq):
        """What libvirt does once Nova's ARQ is Bound: its attach handle's
        function to vfio-pci (the kernel's part, fake_host)."""
        address = handle_address(arq)
        self._kernel_of(address).bind_vfio(address)
        return address

    def give_back(self, arq):
        """What libvirt does before Nova deletes the ARQs: the function
        back to its host driver."""
        address = handle_address(arq)
        self._kernel_of(address).unbind_vfio(address)

    def _kernel_of(self, address):
        if self.gpu_host is not None and address in self.gpu_host.health:
            return self.gpu_host
        return self.kernel


def handle_address(arq):
    """The PCI address of a Bound ARQ's attach handle."""
    info = arq['attach_handle_info']
    return '%s:%s:%s.%s' % (info['domain'], info['bus'], info['device'],
                            info['function'])

"""The node side the kubelet plugin calls into, for tests: the fake FPGA
driver's simulated cards, programmed for real, and a small bitstream
shelf. It stands in for the conductor's program-on-bind path, which the
wiring phase will put behind the same two callables."""
import dataclasses
import hashlib
import os
import threading

from cyborg_lite.agent.dra import device_api
from cyborg_lite.drivers import dfl
from cyborg_lite.drivers import fake
from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import slices


def raw_image(folder, name, payload):
    """A headerless image; the fake driver loads function sha256[:32]."""
    path = os.path.join(folder, name)
    with open(path, 'wb') as f:
        f.write(payload)
    return path, hashlib.sha256(payload).hexdigest()[:32]


@dataclasses.dataclass
class Bitstream:
    uuid: str
    path: str
    function_id: str


def host_inventory(driver, node_name):
    """What the conductor would publish for the driver's cards (the same
    naming both sides use)."""
    devices = []
    for record in driver.discover():
        devices.append(inventory.Device(
            uuid=record.identity, type=record.type, vendor=record.vendor,
            model=record.model, identity=record.identity,
            pci_address=record.pci_address, programmable=True,
            deployables=tuple(inventory.Deployable(
                uuid='%s/%s' % (record.identity, d.name), name=d.name,
                resource_class=d.resource_class, region_type=d.region_type,
                function_id=d.function_id) for d in record.deployables)))
    return inventory.HostInventory(node_name, node_name, tuple(devices))


class FakeNode:
    """prepare_device / release_device over the fake driver."""

    def __init__(self, conf, node_name):
        self.driver = fake.FakeDriver(conf)
        self.node_name = node_name
        self.bitstreams = {}
        self.programmed = []          # (device name, function id)
        self.released = []            # (claim uid, device name)
        self.in_use = {}              # device name -> claim uid
        self.gate = threading.Event()  # programming waits for it
        self.gate.set()
        self._lock = threading.Lock()
        self.regions = {}             # device name -> (identity, region)
        for device in host_inventory(self.driver, node_name).devices:
            for deployable in device.deployables:
                self.regions[slices.device_name(device, deployable)] = (
                    device.identity, deployable.name)

    def add_bitstream(self, bitstream):
        self.bitstreams[bitstream.uuid] = bitstream

    def _bitstream_for(self, config):
        if config.bitstream_id:
            found = self.bitstreams.get(config.bitstream_id)
        else:
            found = next((b for b in self.bitstreams.values()
                          if b.function_id == config.function_id), None)
        if found is None:
            raise device_api.DevicePrepareError(
                'no bitstream %s' % (config.bitstream_id or
                                     'for function %s' % config.function_id))
        return found

    def prepare_device(self, request):
        if request.device not in self.regions:
            raise device_api.DevicePrepareError('no device %s on %s' % (
                request.device, self.node_name))
        identity, region = self.regions[request.device]
        with self._lock:
            holder = self.in_use.get(request.device)
            if holder not in (None, request.claim_uid):
                raise device_api.DevicePrepareError(
                    '%s is in use by claim %s' % (request.device, holder))
            self.in_use[request.device] = request.claim_uid
        function_id = self.driver.loaded_function(identity, region)
        if request.config and not request.admin_access:
            bitstream = self._bitstream_for(request.config)
            if bitstream.function_id != function_id or request.config.force:
                self.gate.wait()
                self.driver.program(identity, region, bitstream.path)
                function_id = self.driver.loaded_function(identity, region)
                self.programmed.append((request.device, function_id))
        _card, port = dfl.find_port(self.driver.tree.sys, identity, region)
        node = os.path.basename(port.port_dir)
        return device_api.PreparedDevice(
            device_nodes=(device_api.DeviceNode(
                path='/dev/' + node,
                host_path=os.path.join(self.driver.tree.dev, node)),),
            env=(('CYBORG_LITE_FUNCTION_ID', function_id),
                 ('CYBORG_LITE_DEVICE', request.device)))

    def release_device(self, claim_uid, pool, device):
        with self._lock:
            if self.in_use.get(device) == claim_uid:
                del self.in_use[device]
            self.released.append((claim_uid, device))

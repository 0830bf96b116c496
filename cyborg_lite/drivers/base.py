"""The driver contract: a base class and the interfaces a driver opts into.

A driver is a ``Driver`` (what the loader instantiates) that also inherits
one or more interfaces, each an ABC with typed abstract methods:

* ``DiscoveryInterface`` - report the devices of this host;
* ``ProgrammingInterface`` - load an image into a region, read it back;
* ``CleaningInterface`` - wipe what one tenant left before the next;
* ``HealthInterface`` - read the hardware's own health signals;
* ``InstanceInterface`` - make at bind the instance a handle hands over
  (a vGPU written into a VF) and remove it at release.

The agent asks what a driver can do with ``isinstance`` (e.g. only a
``ProgrammingInterface`` gets programming jobs), never by calling a method
and catching an error. Drivers know nothing of the database, RPC or
Placement; what they report is the records of
``cyborg_lite.common.device_records``.
"""
import abc

from cyborg_lite.common import device_records
from cyborg_lite.common import health


class Driver:
    """Base of every driver loaded from the ``cyborg_lite.drivers`` group.

    Subclasses read their options from ``conf`` (a ConfigOpts) in
    ``__init__``; a root path option lets tests point them at fixture trees.
    """

    #: entry-point name, set by the agent's loader.
    name = None

    def __init__(self, conf):
        self.conf = conf


class DiscoveryInterface(abc.ABC):
    """Reports what the host has."""

    @abc.abstractmethod
    def discover(self) -> list[device_records.DeviceRecord]:
        """Return the list of DeviceRecord this host has now.

        Finding nothing is a valid answer (an empty list).

        :raises exception.DriverError: the scan itself failed, so the
            caller keeps what this driver reported last instead of
            deleting it.
        """


class ProgrammingInterface(abc.ABC):
    """Loads images (bitstreams) into regions and reads back what is there."""

    @abc.abstractmethod
    def program(self, identity: str, region_name: str,
                image_path: str) -> None:
        """Load the image at ``image_path`` into one region of one device.

        ``image_path`` is the bitstream file as stored (with its header, if
        the format has one); the driver strips what the hardware does not
        take.

        :raises exception.ProgrammingError: the device or region is
            unknown, the image does not fit the region, or the hardware
            refused it.
        """

    @abc.abstractmethod
    def loaded_function(self, identity: str, region_name: str) -> str | None:
        """The function (AFU / accelerator-type) id loaded now, or None.

        Read back from the hardware after programming, to verify it.

        :raises exception.DriverError: the device or region is unknown or
            its state is unreadable.
        """


class CleaningInterface(abc.ABC):
    """Secure cleanup of a deployable between two tenants."""

    @abc.abstractmethod
    def clean(self, identity: str, deployable_name: str) -> None:
        """Leave one deployable with nothing a previous user can read.

        ``identity`` is the device's (DeviceRecord.identity) and
        ``deployable_name`` one of its deployables (DeployableRecord.name).
        Called while nothing is attached to the deployable; the caller
        keeps it out of scheduling until this returns. Blocking: a GPU
        reset or a scrub bitstream takes seconds. Idempotent: cleaning a
        clean deployable is harmless, so a caller that lost the answer
        calls again. What was loaded may be gone afterwards (a scrub
        image replaces it): the next discovery reports what is there.

        :raises exception.CleaningError: the device or deployable is
            unknown, this kind of deployable cannot be cleaned by the
            driver, or the hardware or its tool refused; the deployable
            must then stay out of service.
        """


class InstanceInterface(abc.ABC):
    """Makes what a bind hands over when the bind comes, not before."""

    @abc.abstractmethod
    def make_instance(self, identity: str, deployable_name: str,
                      attach_info: dict) -> dict:
        """Make one instance of the deployable on the function the
        handle ``attach_info`` names; the attach info to hand over.

        :raises exception.DriverError: nothing was made, with why (the
            function can no longer make it, the kernel refused).
        """

    @abc.abstractmethod
    def remove_instance(self, identity: str, deployable_name: str,
                        attach_info: dict) -> bool:
        """Remove the instance this host made on that function: True if
        one was removed, False if none was there. One made by someone
        else is left alone.

        :raises exception.DriverError: it is still there (e.g. a guest
            still has it open): try again later.
        """


class HostTopologyInterface(abc.ABC):
    """The host's NUMA nodes as the tree this driver reads shows them."""

    @abc.abstractmethod
    def numa_nodes(self) -> list:
        """The host's NUMA nodes (common/topology.NODE_KEYS dicts:
        node, cpulist, socket, distances), [] when the tree has none.

        The agent reports the first non-empty answer of its drivers once
        per host: the SLIT that the devices' NUMA nodes refer to.

        :raises exception.HostDataError: the nodes do not add up.
        """


class HealthInterface(abc.ABC):
    """Reads the health signals of the devices a scan found."""

    @abc.abstractmethod
    def read_health(self, devices: list[device_records.DeviceRecord],
                    missing: list[device_records.DeviceRecord]
                    ) -> dict[str, health.Signals]:
        """{identity: Signals} of ``devices`` and ``missing``.

        Called by the agent right after ``discover()`` with what it
        returned (a driver may reuse what that scan read), and with
        ``missing``: devices the previous scan found and this one did
        not. Signals of a missing device say whether it vanished from
        the PCI bus (a ``Condition`` of signal ``pci``); none means it is
        merely not listed any more (rebound to vfio-pci, say). Readings
        that cannot be made are ``Unreadable``, never an exception: a
        health read never fails a scan. Nothing may be written to the
        hardware.
        """


#: Every interface a driver may implement, for the loader's sanity check.
INTERFACES = (DiscoveryInterface, ProgrammingInterface, CleaningInterface,
              HostTopologyInterface, HealthInterface)


class ContainerDevicesInterface(abc.ABC):
    """What a container needs to use a deployable (Kubernetes claims)."""

    @abc.abstractmethod
    def device_nodes(self, identity: str, deployable_name: str,
                     attach_info: dict | None = None) -> list:
        """[(path in the container, path on the host)] of the character
        devices that give access to one deployable (a DFL port's
        ``/dev/dfl-port.N``). ``attach_info``: the claim's handle, where
        the deployable's handles differ (the VF of one vGPU among its
        type's).

        :raises exception.DriverError: the device or deployable is unknown.
        """

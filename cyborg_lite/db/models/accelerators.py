"""Devices, their deployables, attach handles and who holds them: ARQs,
Kubernetes claims, device profiles."""
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite.common import enums
from cyborg_lite.common import states
from cyborg_lite.db.models.base import (
    Base, IdMixin, VersionedMixin, TopologyMixin, enum_type, DEVICE_TYPES,
    DEVICE_STATUSES, DEVICE_HEALTH, ARQ_STATES, DEVICE_STATES)


class Device(IdMixin, VersionedMixin, TopologyMixin, Base):
    """One physical card on one host, as one driver reported it."""
    __tablename__ = 'devices'
    __table_args__ = (
        sa.UniqueConstraint('hostname', 'driver_name', 'identity'),
        sa.Index('ix_devices_created_at_id', 'created_at', 'id'),
    )

    type: orm.Mapped[str] = orm.mapped_column(enum_type(DEVICE_TYPES,
                                                        'device_type'))
    vendor: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    model: orm.Mapped[str] = orm.mapped_column(sa.String(255), default='')
    std_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    vendor_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255), index=True)
    driver_name: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    # Stable identity within (hostname, driver): the PCI address for PCI
    # cards, so a reorder or rename of sysfs nodes is not a new device.
    identity: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    pci_address: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    status: orm.Mapped[str] = orm.mapped_column(
        enum_type(DEVICE_STATUSES, 'device_status'), default='enabled')
    # common/states.HEALTH as the agent's monitor reports it, why, and
    # since when by the database's clock (set by db/inventory.py when
    # the state changes).
    health: orm.Mapped[str] = orm.mapped_column(
        enum_type(DEVICE_HEALTH, 'device_health'), default='healthy')
    health_reason: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(states.MAX_HEALTH_REASON))
    health_since: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))


class ControlpathId(IdMixin, Base):
    """How the host controls a device (for PCI, its PF address)."""
    __tablename__ = 'controlpath_ids'

    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'), index=True)
    cpid_type: orm.Mapped[str] = orm.mapped_column(
        enum_type(enums.CPID_TYPES, 'cpid_type'))
    cpid_info: orm.Mapped[str] = orm.mapped_column(sa.String(255))


class Deployable(IdMixin, VersionedMixin, TopologyMixin, Base):
    """A schedulable part of a device: for an FPGA, one PR region. Its
    topology is its own PCI function's (a VF) or else its device's."""
    __tablename__ = 'deployables'
    __table_args__ = (
        sa.Index('ix_deployables_created_at_id', 'created_at', 'id'),
    )

    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'), index=True)
    parent_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    root_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    # Unique name, also the resource provider name in Placement.
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    num_accelerators: orm.Mapped[int] = orm.mapped_column(sa.Integer,
                                                          default=1)
    # Indexed: every bind finds its region by resource provider.
    rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36),
                                                        index=True)
    driver_name: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    # PR interface id / compat_id of the region; None for fixed functions.
    region_type: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # What is loaded now: the bitstream we programmed (if known) and the
    # function (AFU / accelerator-type) id the hardware reports.
    bitstream_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    function_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    function_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    local_memory_mb: orm.Mapped[int] = orm.mapped_column(sa.Integer,
                                                         default=0)
    # Secure cleanup between tenants: common/states.DEVICE (Cyborg 17 keeps
    # its device_state on devices; a region is what one tenant holds).
    # Only db/cleaning.py's conditional UPDATEs write these, on the state
    # they decided on and without bumping ``version``, so an agent report
    # flushing the same row never conflicts with a clean.
    device_state: orm.Mapped[str] = orm.mapped_column(
        enum_type(DEVICE_STATES, 'device_state'), default='available',
        server_default='available', index=True)
    # The database's time of the last move, or of the cleaning agent's
    # last heartbeat (what the reaper compares with).
    device_state_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    # The current cleaning try; an agent's report names it, and a report
    # of an older try is refused.
    cleaning_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    # When the agent began that try (its first heartbeat); None while no
    # live agent runs it: such a try never counts as one.
    cleaning_started_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    # Tries abandoned (their agent died) since the region was released.
    cleaning_attempts: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, default=0, server_default='0')
    # Why the last clean failed, for the operator.
    cleaning_error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # The PCI function the region is reached through (pciBusID).
    pci_bus_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    # The region's own health (its port's signals), as on devices.
    health: orm.Mapped[str] = orm.mapped_column(
        enum_type(DEVICE_HEALTH, 'deployable_health'), default='healthy',
        server_default='healthy')
    health_reason: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(states.MAX_HEALTH_REASON))
    health_since: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)


class Attribute(IdMixin, Base):
    """Key/value per deployable (``rc``, ``trait0``..``traitN``, ...)."""
    __tablename__ = 'attributes'
    __table_args__ = (sa.UniqueConstraint('deployable_id', 'key'),)

    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'), index=True)
    key: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    value: orm.Mapped[str] = orm.mapped_column(sa.Text)


class AttachHandle(IdMixin, VersionedMixin, Base):
    """What a workload attaches: a PCI function or an mdev."""
    __tablename__ = 'attach_handles'

    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'), index=True)
    cpid_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('controlpath_ids.id', ondelete='SET NULL'))
    in_use: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    attach_type: orm.Mapped[str] = orm.mapped_column(
        enum_type(enums.ATTACH_TYPES, 'attach_type'))
    # JSON, e.g. {"domain":"0000","bus":"5e","device":"00","function":"1"}
    attach_info: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    # The key of the function (host and attach_info, hashed) while the
    # handle is in use, NULL while it is free. Sibling handles may name one
    # function (regions of a card reached through its PF): the UNIQUE
    # constraint is the database's "one ARQ per PCI function or mdev"
    # across all of them (portable, unlike partial indexes).
    in_use_function: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64), unique=True)
    # Its holder let go and the instance a bind made on its function (a
    # vGPU in a VF) is still there: kept in use until the host's agent
    # removed it (db/instance_removals.py). NULL: none awaited.
    awaits_removal: orm.Mapped[bool | None] = orm.mapped_column(
        sa.Boolean)


class KubernetesClaimDevice(IdMixin, Base):
    """A region prepared for a Kubernetes ResourceClaim: its attach handle
    is held for ``k8s:<claim_uid>`` as an ARQ holds one for Nova, so one
    region is never given to both (db/k8s_claims.py)."""
    __tablename__ = 'k8s_claim_devices'
    # A row per device of the claim: two vGPUs of one type are two rows of
    # one deployable, each its own VF.
    __table_args__ = (sa.UniqueConstraint('claim_uid', 'device_name'),)

    claim_uid: orm.Mapped[str] = orm.mapped_column(sa.String(36),
                                                   index=True)
    namespace: orm.Mapped[str] = orm.mapped_column(sa.String(63))
    claim_name: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    # The device's name in the node's pool (a DNS label).
    device_name: orm.Mapped[str] = orm.mapped_column(sa.String(63))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    # The pods the claim was reserved for at Prepare (its
    # status.reservedFor), comma-separated; NULL when not known.
    pods: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'), index=True)
    # UNIQUE, as accelerator_requests.attach_handle_id: one holder each.
    attach_handle_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('attach_handles.id', ondelete='CASCADE'), unique=True)
    # The job loading the region for this claim, so a retried prepare
    # waits on it instead of starting another.
    programming_job_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('programming_jobs.id', ondelete='SET NULL'))


class DeviceProfile(IdMixin, Base):
    """A named list of request groups."""
    __tablename__ = 'device_profiles'

    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    description: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # JSON list of groups, each a dict of string keys to string values.
    profile_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    # Owner; NULL for profiles an admin made for everybody.
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                           index=True)


class AcceleratorRequest(IdMixin, VersionedMixin, Base):
    """An ARQ: one accelerator asked for by one device profile group."""
    __tablename__ = 'accelerator_requests'
    __table_args__ = (
        sa.Index('ix_accelerator_requests_created_at_id', 'created_at', 'id'),
    )

    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                           index=True)
    # Indexed: the bind reaper's gate looks for a BindStarted one among
    # many Bound (db/arq_binds.any_started).
    state: orm.Mapped[str] = orm.mapped_column(enum_type(ARQ_STATES,
                                                         'arq_state'),
                                               default='Initial', index=True)
    device_profile_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('device_profiles.id', ondelete='RESTRICT'),
        index=True)
    device_profile_group_id: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    device_rp_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36), index=True)
    # Unique: the database itself refuses two ARQs on one attach handle.
    attach_handle_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('attach_handles.id', ondelete='SET NULL'),
        unique=True)
    deployable_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='SET NULL'))
    bind_started_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    # When the bind was last cast to the conductors, and when and by which
    # conductor it was taken: a bind nobody took was lost on its way and is
    # sent again; one taken and left is failed (conductor/bind.py).
    bind_dispatched_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    bind_taken_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(sa.DateTime)
    bind_taken_by: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # The busy region running its function that the bind waits for
    # (conductor/bind_wait.py); NULL when it waits for none.
    bind_waits_for_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='SET NULL'), index=True)
    # Why the last bind failed, shown to the user.
    error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)

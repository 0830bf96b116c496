"""SQLAlchemy models: the one description of the schema.

Migrations in db/migrations/ must produce exactly this schema; a test
compares the two with alembic's autogenerate on SQLite and PostgreSQL.

Conventions:
- ``id`` is the internal key used by foreign keys; ``uuid`` is the public id.
- Rows that several conductors may update at once carry ``version``, used as
  SQLAlchemy's version_id_col: an UPDATE whose version no longer matches
  touches no row and raises StaleDataError instead of losing a write.
- Enumerations are VARCHAR with a CHECK constraint (portable, and a bad value
  is refused by the database itself).
"""
import collections
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite.common import enums
from cyborg_lite.common import states
from cyborg_lite.db.sql import clock

# The enumerations (common/enums.py, common/states.py) by the names the
# table modules use.
DEVICE_TYPES = enums.DEVICE_TYPES
DEVICE_STATUSES = enums.DEVICE_STATUSES
DEVICE_HEALTH = states.HEALTH.states
ARQ_STATES = states.ARQ.states
BITSTREAM_FORMATS = enums.BITSTREAM_FORMATS
BITSTREAM_STATUSES = enums.BITSTREAM_STATUSES
VISIBILITIES = enums.VISIBILITIES
SIGNATURE_POLICIES = enums.SIGNATURE_POLICIES
JOB_STATES = states.JOB.states
DEVICE_STATES = states.DEVICE.states
AGENT_STATES = enums.AGENT_STATES
utcnow = clock.utcnow

NAMING_CONVENTION = {
    'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
    'uq': 'uq_%(table_name)s_%(column_0_N_name)s',
    'ck': 'ck_%(table_name)s_%(constraint_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
}


def new_row_type(model):
    """A plain stand-in for a new ``model`` object that is written with a
    Core INSERT and shown at once: its columns as attributes (of the same
    names), the unset ones None, as the new ORM object has them. Building
    the ORM object (its instrumentation) cost a tenth of the request."""
    keys = [column.key for column in model.__table__.columns]
    return collections.namedtuple('New' + model.__name__, keys,
                                  defaults=[None] * len(keys))


def _enum(values, name):
    return sa.Enum(*values, name=name, native_enum=False,
                   create_constraint=True, length=16,
                   validate_strings=True)


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=utcnow)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, nullable=True, onupdate=utcnow)


class IdMixin(TimestampMixin):
    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              unique=True)


class VersionedMixin:
    version: orm.Mapped[int] = orm.mapped_column(sa.Integer, nullable=False,
                                                 default=1)

    @orm.declared_attr.directive
    def __mapper_args__(cls):
        return {'version_id_col': cls.__table__.c.version}


class TopologyMixin:
    """Where a PCI function sits (common/topology.py): None where the
    driver or the platform gave nothing."""
    numa_node: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    local_cpulist: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    socket: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    pcie_root: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))


class Device(IdMixin, VersionedMixin, TopologyMixin, Base):
    """One physical card on one host, as one driver reported it."""
    __tablename__ = 'devices'
    __table_args__ = (
        sa.UniqueConstraint('hostname', 'driver_name', 'identity'),
        sa.Index('ix_devices_created_at_id', 'created_at', 'id'),
    )

    type: orm.Mapped[str] = orm.mapped_column(_enum(DEVICE_TYPES,
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
        _enum(DEVICE_STATUSES, 'device_status'), default='enabled')
    # common/states.HEALTH as the agent's monitor reports it, why, and
    # since when by the database's clock (set by db/inventory.py when
    # the state changes).
    health: orm.Mapped[str] = orm.mapped_column(
        _enum(DEVICE_HEALTH, 'device_health'), default='healthy')
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
        _enum(enums.CPID_TYPES, 'cpid_type'))
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
        _enum(DEVICE_STATES, 'device_state'), default='available',
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
        _enum(DEVICE_HEALTH, 'deployable_health'), default='healthy',
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
        _enum(enums.ATTACH_TYPES, 'attach_type'))
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
    __table_args__ = (sa.UniqueConstraint('claim_uid', 'deployable_id'),)

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
    state: orm.Mapped[str] = orm.mapped_column(_enum(ARQ_STATES,
                                                     'arq_state'),
                                               default='Initial')
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


class Bitstream(IdMixin, Base):
    """Metadata of an FPGA image; its bytes live in the content store."""
    __tablename__ = 'bitstreams'

    name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    version: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    vendor: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    format: orm.Mapped[str] = orm.mapped_column(_enum(BITSTREAM_FORMATS,
                                                      'bitstream_format'))
    region_type: orm.Mapped[str | None] = orm.mapped_column(sa.String(255),
                                                            index=True)
    function_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                            index=True)
    function_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    local_memory_mb: orm.Mapped[int] = orm.mapped_column(sa.Integer,
                                                         default=0)
    sha256: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                       index=True)
    size: orm.Mapped[int | None] = orm.mapped_column(sa.BigInteger)
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                           index=True)
    visibility: orm.Mapped[str] = orm.mapped_column(
        _enum(VISIBILITIES, 'bitstream_visibility'), default='private')
    status: orm.Mapped[str] = orm.mapped_column(
        _enum(BITSTREAM_STATUSES, 'bitstream_status'), default='queued')
    # A detached signature of the image's sha256 (bitstreams/signatures.py),
    # base64; the key its uploader named (NULL: any trusted key that
    # verifies it); when it came (a certificate must be valid then). Its
    # signature_status is worked out from these and trusted_keys on read.
    signature: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    signature_key_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))
    signed_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)


class TrustedKey(IdMixin, Base):
    """A public key an admin trusts to sign bitstreams: for every project
    (``project_id`` NULL) or for one. Revoked keys stay, as the record of
    the revocation: a key id is registered once (db/trusted_keys.py)."""
    __tablename__ = 'trusted_keys'

    # sha256 of the SubjectPublicKeyInfo DER, hex (bitstreams/signatures.py).
    key_id: orm.Mapped[str] = orm.mapped_column(sa.String(64), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    algorithm: orm.Mapped[str] = orm.mapped_column(
        _enum(enums.SIGNATURE_ALGORITHMS, 'signature_algorithm'))
    # PEM SubjectPublicKeyInfo; the certificate it came in, if any, with
    # the certificate's subject and validity (naive UTC).
    public_key: orm.Mapped[str] = orm.mapped_column(sa.Text)
    certificate: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    subject: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    not_before: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    not_after: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                           index=True)
    revoked_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    revocation_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)


class ProjectSignaturePolicy(TimestampMixin, Base):
    """An admin's [bitstreams]signature_policy for one project
    (db/signature_policies.py)."""
    __tablename__ = 'project_signature_policies'

    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(64),
                                                    primary_key=True)
    policy: orm.Mapped[str] = orm.mapped_column(
        _enum(SIGNATURE_POLICIES, 'signature_policy'))


class ProgrammingJob(IdMixin, VersionedMixin, Base):
    """One request to load a bitstream into one region."""
    __tablename__ = 'programming_jobs'

    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'), index=True)
    bitstream_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('bitstreams.id', ondelete='RESTRICT'), index=True)
    # Equal to deployable_id while the job is active, NULL once it ended:
    # the unique constraint is the database's "one active job per region"
    # (portable, unlike partial indexes).
    active_deployable_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, unique=True)
    state: orm.Mapped[str] = orm.mapped_column(_enum(JOB_STATES,
                                                     'job_state'),
                                               default='queued')
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    attempts: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    max_attempts: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=1)
    force: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    requester_user_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64),
                                                           index=True)
    # The namespace of the Kubernetes claim whose Prepare started the job
    # (its accounting; the claim's own row goes with its release).
    namespace: orm.Mapped[str | None] = orm.mapped_column(sa.String(63))
    arq_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('accelerator_requests.id', ondelete='SET NULL'))
    started_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    heartbeat_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    finished_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)


class ProgrammingJobTry(Base):
    """One try of a programming job: an agent took the job (its first
    report) and the try ended one way or another."""
    __tablename__ = 'programming_job_tries'
    __table_args__ = (sa.UniqueConstraint('job_id', 'number'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    job_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('programming_jobs.id', ondelete='CASCADE'))
    # 1 for the first try; the job's ``attempts`` is the latest number.
    number: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    outcome: orm.Mapped[str] = orm.mapped_column(
        _enum(states.JOB_TRY_OUTCOMES, 'job_try_outcome'), default='running')
    error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    started_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False)
    ended_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)


class Agent(TimestampMixin, Base):
    """One host's agent: when it last said it was alive, and whether the
    conductors consider it up (see db/agents.py)."""
    __tablename__ = 'agents'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  unique=True)
    state: orm.Mapped[str] = orm.mapped_column(_enum(AGENT_STATES,
                                                     'agent_state'),
                                               default='up')
    # The database's clock (db/sql/clock.py), as every cross-host timestamp.
    heartbeat_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime)


class Service(TimestampMixin, Base):
    """One running service (kind: agent, conductor, api) on one host: the
    release and RPC versions it said with its last heartbeat (see
    db/services.py)."""
    __tablename__ = 'services'
    __table_args__ = (sa.UniqueConstraint('kind', 'host',
                                          name='uniq_services0kind0host'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(32), nullable=False)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                              nullable=False)
    release: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    rpc_versions: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # The database's clock (db/sql/clock.py), as every cross-host timestamp.
    heartbeat_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False)


class PublishRequest(Base):
    """A host whose offer changed (a report, a loaded function, a clean, a
    bind on a shared function, a device disabled, an agent down): written
    in the transaction of the change, deleted once every inventory sink
    has the host again (see db/publish_requests.py). Insert-only, so
    writers never contend on it. Ids only grow (AUTOINCREMENT on SQLite,
    which would otherwise hand out an emptied table's ids again): a serve
    deletes up to an id, and published_hosts keeps the highest served."""
    __tablename__ = 'publish_requests'
    __table_args__ = {'sqlite_autoincrement': True}

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  index=True)
    reason: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=utcnow)


class HostTopology(Base):
    """A host's NUMA nodes as its agent last reported them: the ACPI SLIT
    once per host (db/host_topology.py, common/topology.py)."""
    __tablename__ = 'host_topologies'

    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  primary_key=True)
    # Canonical JSON: [{"node", "cpulist", "socket", "distances"}, ...].
    numa_nodes: orm.Mapped[str] = orm.mapped_column(sa.Text)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=utcnow, onupdate=utcnow)


class PlacementProvider(Base):
    """What a conductor last read or wrote of one of our resource
    providers in Placement, at a generation: any other conductor (or this
    one after a restart) that lists the provider at that generation knows
    its inventories and traits without reading them
    (placement/reporter.py, db/placement_providers.py)."""
    __tablename__ = 'placement_providers'

    rp_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36),
                                                 primary_key=True)
    generation: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    # Canonical JSON: {resource class: {field: value}}, [trait, ...].
    inventories: orm.Mapped[str] = orm.mapped_column(sa.Text)
    traits: orm.Mapped[str] = orm.mapped_column(sa.Text)


class PublishedHost(Base):
    """Which conductor's publisher last served a host's publish requests,
    and up to which request: that publisher alone may trust what it
    remembers of the host in the sinks (see db/publish_requests.py)."""
    __tablename__ = 'published_hosts'

    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  primary_key=True)
    publisher: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    request_id: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=utcnow, onupdate=utcnow)


class DeviceHistory(Base):
    """One transition of a device, or of a region or holder on it: what
    happened, when, to whom, and why (db/device_history.py). Written in
    the transaction of the transition, so a row says only what
    happened. Keyed by uuids, not foreign keys: a device removed from its
    host keeps its history until it is pruned by age and count."""
    __tablename__ = 'device_history'
    __table_args__ = (
        sa.Index('ix_device_history_device_uuid_id', 'device_uuid', 'id'),
    )

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    device_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    deployable_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    # The notification's event type without the service, e.g.
    # "arq.bind.end" (notifications/events.EVENTS).
    event: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    # What the transition moved to: an ARQ or job state, a device status
    # or health, a region's device_state, an agent's up or down.
    state: orm.Mapped[str | None] = orm.mapped_column(sa.String(32))
    # The ARQ, job, cleaning try or claim uid the transition was about.
    object_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    # Who: a project and instance (Nova), or a namespace and claim
    # (Kubernetes: the kubelet's Prepare names the claim, not the pod).
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36))
    namespace: orm.Mapped[str | None] = orm.mapped_column(sa.String(63))
    claim_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(253))
    reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # A programming job's end: its seconds from creation to end.
    seconds: orm.Mapped[float | None] = orm.mapped_column(sa.Float)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=utcnow, index=True)

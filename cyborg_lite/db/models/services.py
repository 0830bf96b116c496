"""What the services keep about themselves and the hosts: agents,
services, publish requests, topology, what Placement was sent, the
devices' history."""
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite.db.models.base import (
    Base, TimestampMixin, enum_type, utcnow, AGENT_STATES)


class Agent(TimestampMixin, Base):
    """One host's agent: when it last said it was alive, and whether the
    conductors consider it up (see db/agents.py)."""
    __tablename__ = 'agents'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  unique=True)
    state: orm.Mapped[str] = orm.mapped_column(enum_type(AGENT_STATES,
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

"""Bitstreams, the keys and policies their signatures meet, and the jobs
that program them."""
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite.common import enums
from cyborg_lite.common import states
from cyborg_lite.db.models.base import (
    Base, TimestampMixin, IdMixin, VersionedMixin, enum_type,
    BITSTREAM_FORMATS, BITSTREAM_STATUSES, VISIBILITIES, SIGNATURE_POLICIES,
    JOB_STATES)


class Bitstream(IdMixin, Base):
    """Metadata of an FPGA image; its bytes live in the content store."""
    __tablename__ = 'bitstreams'

    name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    version: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    vendor: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    format: orm.Mapped[str] = orm.mapped_column(enum_type(BITSTREAM_FORMATS,
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
        enum_type(VISIBILITIES, 'bitstream_visibility'), default='private')
    status: orm.Mapped[str] = orm.mapped_column(
        enum_type(BITSTREAM_STATUSES, 'bitstream_status'), default='queued')
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
        enum_type(enums.SIGNATURE_ALGORITHMS, 'signature_algorithm'))
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
        enum_type(SIGNATURE_POLICIES, 'signature_policy'))


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
    state: orm.Mapped[str] = orm.mapped_column(enum_type(JOB_STATES,
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
        enum_type(states.JOB_TRY_OUTCOMES, 'job_try_outcome'),
        default='running')
    error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    started_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False)
    ended_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)

"""bind pickup marker on ARQs; tries of programming jobs

accelerator_requests gains bind_dispatched_at, bind_taken_at and
bind_taken_by: the reaper re-sends a bind that no conductor took (its cast
was lost) and fails only one that a conductor took and left.

programming_job_tries keeps each try of a job (host, times, outcome,
error), and programming_jobs.attempts now counts the tries started, not
the ones abandoned: a job whose try had begun (it is past queued, or
ended other than by the reaper running out of tries) gets one more.

Revision ID: 0005
Revises: 0002
Create Date: 2026-12-09 10:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

_TRY_OUTCOMES = ('running', 'succeeded', 'failed', 'abandoned', 'cancelled')
_STARTED = ('downloading', 'programming', 'verifying', 'succeeded')


def upgrade():
    with op.batch_alter_table('accelerator_requests', schema=None) as batch:
        batch.add_column(sa.Column('bind_dispatched_at', sa.DateTime(),
                                   nullable=True))
        batch.add_column(sa.Column('bind_taken_at', sa.DateTime(),
                                   nullable=True))
        batch.add_column(sa.Column('bind_taken_by', sa.String(length=255),
                                   nullable=True))
    op.create_table(
        'programming_job_tries',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('job_id', sa.Integer(), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('hostname', sa.String(length=255), nullable=True),
        sa.Column('outcome', sa.Enum(*_TRY_OUTCOMES, name='job_try_outcome',
                                     native_enum=False,
                                     create_constraint=True, length=16),
                  nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('ended_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ['job_id'], ['programming_jobs.id'],
            name=op.f('fk_programming_job_tries_job_id_programming_jobs'),
            ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_programming_job_tries')),
        sa.UniqueConstraint(
            'job_id', 'number',
            name=op.f('uq_programming_job_tries_job_id_number')))
    jobs = sa.table('programming_jobs', sa.column('state', sa.String),
                    sa.column('attempts', sa.Integer),
                    sa.column('error', sa.Text))
    op.execute(jobs.update()
               .where(sa.or_(jobs.c.state.in_(_STARTED),
                             sa.and_(jobs.c.state == 'failed',
                                     sa.or_(jobs.c.error.is_(None),
                                            ~jobs.c.error.like(
                                                '%no tries left%')))))
               .values(attempts=jobs.c.attempts + 1))


def downgrade():
    # NOTE: attempts keeps the count of tries started; only the shape
    # goes back.
    op.drop_table('programming_job_tries')
    with op.batch_alter_table('accelerator_requests', schema=None) as batch:
        batch.drop_column('bind_taken_by')
        batch.drop_column('bind_taken_at')
        batch.drop_column('bind_dispatched_at')

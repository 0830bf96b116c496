"""Online data migrations: what an expand revision left for old rows,
filled in batches while every service runs
(``cyborg-lite-dbsync online_data_migrations``), as Nova and Placement
do. A contract revision of the next release may rely on them being done;
``cyborg-lite-status upgrade check`` says whether they are.

Each migration is ``fn(max_count) -> (found, done)``: the rows it still
had to migrate, and how many of them it migrated (at most
``max_count``; ``max_count=0`` only counts). Idempotent: a row migrated
is not found again.

What the expand revisions since 2026.1.0 left NULL on old rows:

* device_history.seconds (0016): the end rows of jobs that ended before
  it. The job's row has its times: ``device_history_seconds``.
* programming_jobs.namespace (0016): NULL is the truth for an old job.
  Before 0016 nothing linked a job to the claim that started it (the
  claim's row goes with its release), so no namespace can be derived;
  NULL means "not accounted to a namespace", which such a job is.
* services (0017): a new table; an old service's row says release NULL
  until it runs new code (common/version.UNRECORDED_RELEASE).
* accelerator_requests.bind_waits_for_id (0018): NULL is the truth for
  an old row: no bind before it waited for a region.
* attach_handles.awaits_removal (0019): NULL is the truth for an old
  row: before it a release freed the handle at once.
"""
from cyborg_lite.db import programming_jobs

MIGRATIONS = (
    ('device_history_seconds', programming_jobs.fill_history_seconds),
)


def run(max_count):
    """One batch of every migration, ``max_count`` rows in all; a list of
    (name, found, done, error) (error: the exception's text or None)."""
    results = []
    left = max_count
    for name, migrate in MIGRATIONS:
        try:
            found, done = migrate(left)
        except Exception as exc:   # one failing leaves the others to run
            results.append((name, None, 0, '%s: %s'
                            % (type(exc).__name__, exc)))
            continue
        results.append((name, found, done, None))
        left = max(0, left - done)
    return results


def remaining():
    """{name: rows still to migrate} (a count, migrating nothing)."""
    return {name: migrate(0)[0] for name, migrate in MIGRATIONS}

"""What every table module of db/ uses: engines and transactions,
the conditional UPDATE, the database's clock, JSON text, pages and
the direct statement path. Nothing here knows a table."""

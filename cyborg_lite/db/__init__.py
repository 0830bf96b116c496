"""Database layer: models, sessions, migrations and the queries.

All SQL of cyborg_lite lives in this package. The conductor and the API
call the per-resource query modules here; nothing else builds queries.
"""

"""The metadata database: SQLite by default, PostgreSQL by ``DATABASE_URL``."""

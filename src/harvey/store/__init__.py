"""The store layer: how every Harvey database is opened and how its schema evolves.

``connection`` opens a SQLite file one way (permissions, pragmas, WAL, the busy
timeout, sqlite3 errors translated); ``migrations`` applies a store's ordered,
named migrations once. sessions.db, memory.db and the knowledge stores each
keep their own schema and operations in their package and use these two.
"""

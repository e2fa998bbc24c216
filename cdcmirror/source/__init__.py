"""The source databases: their catalog as plain data, and discovery through SQLAlchemy."""

"""YML: findings about unreadable input, produced by the loader (`ailint.engine.load`)."""

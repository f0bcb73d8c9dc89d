"""AIL: findings about ailint itself (suppressions, crashed rules), produced by the engine."""

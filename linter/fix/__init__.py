"""Fixing: indentation-aware text edits (`edits`, public to rules) and applying them (`apply`)."""

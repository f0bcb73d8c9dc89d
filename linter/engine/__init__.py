"""The engine: sources, loading, the run pipeline, registry and selection, suppression, baseline, config."""

"""ailint's rules, one module per rule under `<family>/`; discovered by `ailint.engine.registry`."""

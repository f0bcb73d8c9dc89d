"""ailint: a static analyzer for the YAML that runs AI workloads on Kubernetes."""

__version__ = "0.1.0"

# Before PyYAML, click and the rules compile their regular expressions (see ailint.recache).
from . import recache as _recache  # noqa: E402

_recache.install()

"""ailint: a static analyzer for the YAML that runs AI workloads on Kubernetes."""

__version__ = "0.1.0"

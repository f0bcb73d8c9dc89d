"""What rules know about AI workloads on Kubernetes: kinds, workloads, accelerators, Karpenter, Ray,
serving, storage, network policy, RBAC, agents and descheduler. Imported by rules; imports only core."""

"""
## What it does
Checks that a LiteLLM proxy cannot open more database connections than the database
allows. It runs only when the cluster profile sets `db.maxConnections` (the database's
`max_connections`), since the limit is not in the manifests.

For a Deployment or StatefulSet running LiteLLM (image `berriai/litellm*`, `litellm/litellm`,
or a `litellm` entrypoint) with `DATABASE_URL` (or `DATABASE_HOST`) set, it computes
pods x workers x pool limit:

- pods: the `maxReplicas` of an HPA (or `maxReplicaCount` of a KEDA ScaledObject)
  targeting it, else `replicas` (default 1);
- workers: `--num_workers` or the `NUM_WORKERS` env var; default 1 (current LiteLLM;
  older releases defaulted to the CPU count, so set it explicitly);
- pool limit: `general_settings.database_connection_pool_limit` in the proxy config file
  (`--config`, read from the ConfigMap mounted at that path); default 10.

It is an error above `db.maxConnections`, and a warning above `db.maxConnections` minus
the headroom. A literal `DATABASE_URL` whose host is a pooler (RDS Proxy, PgBouncer,
pgcat, Supavisor) is skipped, and so is a config ConfigMap that is not in the run.

## Why is this bad?
Every LiteLLM worker process keeps its own connection pool, so connections multiply with
workers and pods. When an autoscaler adds pods during a traffic spike, the database
refuses new connections: key checks, budgets and spend logging fail and the proxy
returns errors exactly when load is highest. Aurora and RDS size `max_connections` by
instance memory, so the limit is often lower than expected.

## Example
```yaml
# fixture-set: db.maxConnections=200
apiVersion: apps/v1
kind: Deployment
metadata:
  name: litellm
spec:
  replicas: 4
  selector:
    matchLabels: {app: litellm}
  template:
    metadata:
      labels: {app: litellm}
    spec:
      containers:
        - name: litellm
          image: ghcr.io/berriai/litellm:main-v1.74.0-stable
          args: ["--port", "4000", "--num_workers", "8"]
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef: {name: litellm-db, key: url}
```

## Use instead
```yaml
# fixture-set: db.maxConnections=200
apiVersion: apps/v1
kind: Deployment
metadata:
  name: litellm
spec:
  replicas: 4
  selector:
    matchLabels: {app: litellm}
  template:
    metadata:
      labels: {app: litellm}
    spec:
      containers:
        - name: litellm
          image: ghcr.io/berriai/litellm:main-v1.74.0-stable
          args: ["--port", "4000", "--num_workers", "4"]
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef: {name: litellm-db, key: url}
```

## Options
- `headroom-percent` (number, default 10): the share of `db.maxConnections` kept free for
  migrations, admin sessions and other clients.

## Fix
Unsafe, when the config ConfigMap is in the same file and sets
`database_connection_pool_limit`: lowers it to floor(budget / (pods x workers)). Otherwise
no fix: set the pool limit, lower workers or `maxReplicas`, or put RDS Proxy or PgBouncer
in front of the database.

## References
- https://docs.litellm.ai/docs/proxy/prod
- https://docs.litellm.ai/docs/proxy/cli
- https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-proxy.html
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Iterator

from ailint.core.model import Edit, Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import pod_templates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

RULE = Rule(
    code="SRV011",
    name="litellm-db-connection-budget",
    severity=Severity.WARNING,
    summary="LiteLLM pods x workers x pool limit can exceed the database's max connections",
    kinds=("Deployment", "StatefulSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    options={"headroom-percent": Option(10, "share of db.maxConnections kept free", "number")},
    tags=("serving", "gateway", "database"),
)


def _max_connections(ctx: Any) -> int | None:
    v = ctx.profile.get("db.maxConnections")
    if v is None:
        v = as_dict(ctx.profile.get("db")).get("maxConnections")
    return serving.arg_int(v)


def _is_litellm(c: Any) -> bool:
    image = c.image.lower()
    if any(p in image for p in serving.data()["litellm_images"]):
        return True
    toks = c.tokens
    if any(posixpath.basename(t) == "litellm" for t in toks):
        return True
    return any(toks[i] == "-m" and toks[i + 1] in ("litellm", "litellm.proxy.proxy_cli") for i in range(len(toks) - 1))


def _db_env(c: Any) -> tuple[int, dict[str, Any]] | None:
    for name in ("DATABASE_URL", "DATABASE_HOST"):
        idx = c.env_index(name)
        if idx is not None:
            return idx, c.data["env"][idx]
    return None


def _pooled(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    host = re.sub(r"^[a-z0-9+]+://([^@/]*@)?", "", value.lower()).split("/", 1)[0]
    return any(re.search(p, host) for p in serving.data()["db_pooler_hosts"])


def _max_pods(obj: Any, ctx: Any) -> tuple[int, str]:
    ns = obj.namespace_or_default
    for hpa in ctx.of_kind("HorizontalPodAutoscaler", namespace=ns):
        ref = as_dict(hpa.get("spec", "scaleTargetRef"))
        if ref.get("kind") == obj.kind and ref.get("name") == obj.name:
            v = serving.arg_int(hpa.get("spec", "maxReplicas"))
            if v:
                return v, "HPA maxReplicas"
    for so in ctx.of_kind("ScaledObject", namespace=ns):
        ref = as_dict(so.get("spec", "scaleTargetRef"))
        if (ref.get("kind") or "Deployment") == obj.kind and ref.get("name") == obj.name:
            v = serving.arg_int(so.get("spec", "maxReplicaCount"))
            return (v if v is not None else 100), "ScaledObject maxReplicaCount"
    if obj.has(("spec", "replicas")):
        return serving.arg_int(obj.get("spec", "replicas")) or 0, "replicas"
    return 1, "replicas (default)"


def _config(obj: Any, ctx: Any, pod: Any, c: Any) -> tuple[Any, tuple, str] | Literal[False] | None:
    """(ConfigMap, data path, text) of the proxy config; None: no config; False: not in the run."""
    path = serving.get_flag(c.tokens, ["--config"]) or c.env_value("CONFIG_FILE_PATH")
    if not path:
        return None
    vols = {str(v.get("name")): v for _, v in iter_dicts(pod.spec.get("volumes"))}
    best = None
    for m in c.volume_mounts:
        mp = str(m.get("mountPath") or "")
        if not mp:
            continue
        sub = m.get("subPath")
        if sub and path == mp:
            best = (m, str(sub))
        elif not sub and path.startswith(mp.rstrip("/") + "/"):
            rel = path[len(mp.rstrip("/")) + 1 :]
            if best is None or len(mp) > len(str(best[0].get("mountPath"))):
                best = (m, rel)
    if best is None:
        return False
    vol = vols.get(str(best[0].get("name")), {})
    cm_ref = as_dict(vol.get("configMap"))
    name = cm_ref.get("name")
    if not isinstance(name, str):
        return False
    key = best[1]
    for _, item in iter_dicts(cm_ref.get("items")):
        if item.get("path") == key:
            key = str(item.get("key"))
    cm = ctx.named("ConfigMap", name, namespace=obj.namespace_or_default, near=obj)
    if cm is None:
        return False
    text = as_dict(cm.get("data")).get(key)
    return (cm, ("data", key), text) if isinstance(text, str) else False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    max_conn = _max_connections(ctx)
    if not max_conn:
        return
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            if not _is_litellm(c):
                continue
            db = _db_env(c)
            if db is None or _pooled(db[1].get("value")):
                continue
            cfg = _config(obj, ctx, pod, c)
            if cfg is False:
                continue
            limit, limit_how = serving.data()["litellm_pool_limit_default"], "default pool limit"
            if cfg is not None:
                parsed = as_dict(serving.embedded_yaml(cfg[2]))
                v = serving.arg_int(as_dict(parsed.get("general_settings")).get("database_connection_pool_limit"))
                if v is not None:
                    limit, limit_how = v, "database_connection_pool_limit"
            workers = serving.arg_int(serving.get_flag(c.tokens, ["--num_workers", "--num-workers"]))
            w_how = "--num_workers"
            if workers is None:
                workers, w_how = serving.arg_int(c.env_value("NUM_WORKERS")), "NUM_WORKERS"
            if workers is None:
                workers, w_how = serving.data()["litellm_workers_default"], "default workers"
            pods, p_how = _max_pods(obj, ctx)
            total = pods * workers * limit
            head = opts.get_float("headroom-percent")
            budget = math.floor(max_conn * (1 - head / 100))
            if total <= budget:
                continue
            detail = (
                f"{pods} pods ({p_how}) x {workers} workers{' (default)' if w_how.startswith('default') else ''}"
                f" x {limit} pool{' (default)' if limit_how.startswith('default') else ''} = {total} DB "
                "connections"
            )
            path = c.path_of("env", db[0])
            if total > max_conn:
                msg = f"LiteLLM can open {detail}, over db.maxConnections {max_conn}"
                sev = Severity.ERROR
            else:
                msg = f"LiteLLM can open {detail}, within {head:g}% of db.maxConnections {max_conn}"
                sev = Severity.WARNING
            yield RULE.finding(obj, path, msg, severity=sev, fix=_fix(obj, cfg, budget, pods * workers))


def _fix(obj: Any, cfg: Any, budget: int, per: int) -> Fix | None:
    if not cfg or cfg[0].source is not obj.source or per <= 0:
        return None
    new = budget // per
    if new < 1:
        return None
    cm, path, _ = cfg
    rng = serving.match_in_scalar(cm, path, r"database_connection_pool_limit:[ \t]*(\d+)", 1)
    if rng is None:
        return None
    return make_fix(f"set database_connection_pool_limit to {new}", [Edit(rng[0], rng[1], str(new))], unsafe=True)
